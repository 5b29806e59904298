"""The cap page's tables, each defined once (finops.reports.tables)."""

from finops.reports.spend_tables import spend
from finops.reports.tables import Column, Table

CAP_WORKLOADS = Table(
    "cap_workloads",
    (Column("Workload", "label"), Column("Team", "team"), spend()),
    empty="No spend in this cap's scope this period.",
)
CAP_MODELS = Table(
    "cap_models",
    (Column("Model", "label"), Column("Model id", "model", csv_only=True), spend()),
    empty="No spend in this cap's scope this period.",
)
CAP_ALERTS = Table(
    "cap_alerts",
    (
        Column("Raised", "raised"),
        Column("Alert", "title"),
        Column("Threshold", "threshold"),
        Column("State", "state"),
        Column("Sent", "sent"),
    ),
    empty="No alert raised for this cap yet.",
)
