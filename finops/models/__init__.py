"""Domain models, one module per domain (docs/architecture.md module map)."""

from finops.alerts.models.alerts import AlertEvent, AlertKind, AlertMute, AlertSubscription, Notification
from finops.alerts.models.caps import Cap, CapPeriod, CapScope
from finops.alerts.models.channels import Channel, ChannelKind
from finops.contracts.models import CommitmentBasis, Contract, ContractTerm
from finops.performance.models.outcomes import OutcomeBatch, OutcomeCount
from finops.reports.models import ReportDelivery, ReportDocument, ReportSendAttempt, ReportSnapshot, ReportSubscription
from finops.whatif.models import ModelFamily, Offering, RoutingPolicy

from .attribution import AttributionRule, ReattributionJob
from .audit import AuditEntry
from .cache_hits import GatewayCacheHit
from .monthly import MonthlySpend
from .org import Membership, Team, User, Workload
from .performance import (
    DailyPerformance,
    EvalScore,
    MetricKind,
    MonthlyPerformance,
    ReportedPerformance,
    SignatureDailyPerformance,
)
from .pricing import FxRate, ModelPrice
from .sources import Account, ConnectorKind, IngestRun, Provider
from .tokens import ApiToken
from .usage import ChargeCategory, CostBasis, DailySpend, LineSignature, TagSet, UsageLine

__all__ = [
    "Account",
    "ApiToken",
    "AuditEntry",
    "AlertEvent",
    "AlertKind",
    "AlertMute",
    "AlertSubscription",
    "Cap",
    "CapPeriod",
    "CapScope",
    "Channel",
    "ChannelKind",
    "CommitmentBasis",
    "Contract",
    "ContractTerm",
    "Notification",
    "OutcomeBatch",
    "OutcomeCount",
    "AttributionRule",
    "ChargeCategory",
    "ConnectorKind",
    "CostBasis",
    "DailySpend",
    "DailyPerformance",
    "GatewayCacheHit",
    "EvalScore",
    "MetricKind",
    "MonthlyPerformance",
    "ReportedPerformance",
    "SignatureDailyPerformance",
    "FxRate",
    "IngestRun",
    "LineSignature",
    "Membership",
    "ModelFamily",
    "ModelPrice",
    "Offering",
    "RoutingPolicy",
    "MonthlySpend",
    "Provider",
    "ReattributionJob",
    "ReportDelivery",
    "ReportSendAttempt",
    "ReportDocument",
    "ReportSnapshot",
    "ReportSubscription",
    "TagSet",
    "Team",
    "UsageLine",
    "User",
    "Workload",
]
