"""The audit log's table, defined once (finops.reports.tables): the admins' page and its CSV share these columns;
the full before/after snapshots travel in the CSV only."""

from .tables import Column, Table

AUDIT_LOG = Table(
    "audit",
    (
        Column("When (UTC)", "at"),
        Column("Who", "actor"),
        Column("Via", "source", help="ui (pages), api, admin (Django admin), config (apply_config), cli (a command)"),
        Column("Action", "verb"),
        Column("Object", "entity_type"),
        Column("Name", "entity"),
        Column("Id", "entity_id", csv_only=True),
        Column("Changes", "changes", help="Secrets are never shown: a new key or signing secret reads “changed”."),
        Column("Before", "before", csv_only=True),
        Column("After", "after", csv_only=True),
    ),
    empty="No change matches these filters.",
)
