"""The unattributed page's tables (spend no rule claims, by what a rule could match), each defined once for the
page and its CSV (finops.reports.tables)."""

from .spend_tables import TOKENS, spend
from .tables import Column, Table

LINES = Column("Lines", "lines", "count", help="Usage lines in the period")
ACCOUNTS = Column("Accounts", "accounts", help="The accounts these lines come from")
PROVIDERS = Column("Providers", "providers")
EMPTY = "Nothing unattributed in this period."


def _by(name: str, header: str) -> Table:
    return Table(name, (Column(header, "label"), spend(), TOKENS, LINES, ACCOUNTS, PROVIDERS), empty=EMPTY)


BY_API_KEY = _by("by_api_key", "API key")
BY_PROJECT = _by("by_project", "Project")
BY_USER = _by("by_user", "User")
# A line with several tags counts under each: these rows overlap, so they have no total.
BY_TAG = Table(
    "by_tag",
    (
        Column("Tag", "label"),
        Column("Tag key", "tag_key", csv_only=True),
        Column("Tag value", "tag_value", csv_only=True),
        spend(),
        TOKENS,
        LINES,
        ACCOUNTS,
        PROVIDERS,
    ),
    empty=EMPTY,
)
TABLES = (BY_API_KEY, BY_PROJECT, BY_USER, BY_TAG)
