"""Domain models, one module per domain (docs/architecture.md module map)."""

from finops.alerts.models.alerts import AlertEvent, AlertKind, AlertMute, AlertSubscription, Notification
from finops.alerts.models.caps import Cap, CapPeriod, CapScope
from finops.alerts.models.channels import Channel, ChannelKind
from finops.contracts.models import CommitmentBasis, Contract, ContractTerm
from finops.org.models.audit import AuditEntry
from finops.org.models.org import Membership, Team, User, Workload
from finops.org.models.tokens import ApiToken
from finops.performance.models.outcomes import OutcomeBatch, OutcomeCount
from finops.performance.models.performance import (
    DailyPerformance,
    EvalScore,
    LinesAloneDay,
    MetricKind,
    MonthlyPerformance,
    ReportedPerformance,
    SignatureDailyPerformance,
)
from finops.prices.models import FxRate, ModelPrice
from finops.reports.models import ReportDelivery, ReportDocument, ReportSendAttempt, ReportSnapshot, ReportSubscription
from finops.sources.models import Account, ConnectorKind, IngestRun, Provider
from finops.spend.models.attribution import AttributionRule, ReattributionJob
from finops.spend.models.cache_hits import GatewayCacheHit
from finops.spend.models.monthly import MonthlySpend
from finops.spend.models.team_daily import TeamDailySpend
from finops.spend.models.usage import ChargeCategory, CostBasis, DailySpend, LineSignature, TagSet, UsageLine
from finops.whatif.models import ModelFamily, Offering, RoutingPolicy

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
    "LinesAloneDay",
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
    "TeamDailySpend",
    "UsageLine",
    "User",
    "Workload",
]
