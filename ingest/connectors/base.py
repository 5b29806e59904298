"""What every source kind produces, and how it fails.

A connector turns a provider's payload or file into UsageRow objects and nothing else: no database,
no pricing. Shapes it does not understand raise ProviderError naming where (file, line, page) and what.
"""

import csv
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import BinaryIO, Protocol

from finops.performance.measures import Performance
from finops.spend.models.usage import tags_text


class ProviderError(Exception):
    """`permanent` errors (bad credentials, a malformed file) are not retried; transient ones are.

    `reason` lets the pipeline act on the kind of failure: "auth" disables the account (401/403),
    "quota" stops without retrying, "rate_limit" and "server" are retried with backoff, "malformed"
    and "bad_input" fail the run with the message as it is.
    """

    def __init__(self, message: str, *, permanent: bool = True, reason: str = "bad_input"):
        super().__init__(message)
        self.permanent = permanent
        self.reason = reason


@dataclass
class UsageRow:
    period_start: dt.datetime
    period_end: dt.datetime
    model_raw: str
    input_tokens: int = 0  # uncached input only: the four token classes are disjoint
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost: Decimal | None = None  # as billed, in `currency`; None when the source has no cost
    currency: str = "USD"
    provider_slug: str = ""  # empty: the account's provider
    service_tier: str = ""
    project_ref: str = ""
    api_key_ref: str = ""
    user_ref: str = ""
    tags: dict = field(default_factory=dict)
    charge_category: str = "usage"
    source_ref: str = ""  # where it came from, for error messages: "file.csv line 12"
    # FOCUS rows name the billing period they belong to; an import replaces whole periods (a restated month).
    billing_period_start: dt.datetime | None = None
    billing_period_end: dt.datetime | None = None
    # Gateway logs: the line's finops.performance.measures.Performance (requests, errors, latency distributions).
    latency: Performance | None = None
    invoice_id: str = ""  # FOCUS InvoiceId: the invoice that carries the line, where the source names one


# The charge category of a UsageRow that is no usage: requests a gateway (LiteLLM) answered from its own cache. The
# writer stores them apart (finops.models.GatewayCacheHit), never as usage lines: no provider served or billed them.
GATEWAY_CACHE_HIT = "gateway_cache_hit"


class BatchDeclined(Exception):
    """A batch reader or writer met something only the row path handles exactly: read the source row by row."""


@dataclass
class RowBatch:
    """Many rows as columns: pyarrow arrays of equal length, one per UsageRow field (ingest/columnar.py writes them).

    Made by a batch reader (focus/batches.py) only for rows that need nothing row by row: `cost` is the billed
    amount as exact decimal text, every row has one; tags are `tag_sets[tag_set_of[i]]`.
    """

    period_start: object
    period_end: object
    billing_period_start: object  # null where the source names no billing period
    billing_period_end: object
    model_raw: object
    input_tokens: object
    cached_input_tokens: object
    cache_write_tokens: object
    output_tokens: object
    requests: object
    cost: object
    currency: object
    provider_slug: object
    service_tier: object
    project_ref: object
    api_key_ref: object
    user_ref: object
    tag_set_of: object
    tag_sets: list
    charge_category: object
    invoice_id: object = None  # FOCUS InvoiceId as text ("" none); None: the reader has no invoice ids

    def __len__(self) -> int:
        return len(self.period_start)


_encode_tags = tags_text  # the one definition of a tag set's canonical text
# Lines repeat a few thousand tag sets; the cache is bounded (emptied when full), so memory stays flat however
# long the source is.
_CACHE_LIMIT = 4096  # entries (a tag set's is ~1 KB)
_tags_texts: dict[tuple, str] = {}


def tags_json(tags: dict) -> str:
    """`finops.spend.models.usage.tags_text(tags)`, cached: the canonical text a tag set's id is the digest of."""
    try:
        items = tuple(tags.items())
        return _tags_texts[items]
    except KeyError:
        text = _encode_tags(tags)
        # Only all-str tag sets are cached: a cached key is then equal only to the same strings (1 == 1.0 == True).
        if all(type(key) is str and type(value) is str for key, value in items):
            if len(_tags_texts) >= _CACHE_LIMIT:
                _tags_texts.clear()
            _tags_texts[items] = text
        return text
    except (TypeError, AttributeError):  # an unhashable value (a list, a dict), or not a dict at all
        return _encode_tags(tags)


class ApiSource(Protocol):
    """A source pulled over HTTP for a window [start, end) (UTC), through ingest.http.HttpClient only."""

    kind: str
    default_base_url: str

    def fetch(
        self, *, client, base_url: str, secret: str, start: dt.datetime, end: dt.datetime, weigh=None
    ) -> Iterator[UsageRow]:
        """Yield every UsageRow whose period starts in [start, end), following all pages.

        `weigh(row) -> Decimal` is the row's value at list price (tokens × $/M); where a cost report must be
        split over usage lines (see allocation.py) the parts follow it. None: weigh by total tokens.
        """


def token_weight(row: "UsageRow") -> Decimal:
    """The default allocation weight: all tokens of the row."""
    return Decimal(row.input_tokens + row.cached_input_tokens + row.cache_write_tokens + row.output_tokens)


class FileSource(Protocol):
    """A source read from export files (one class per kind, registered in ingest.connectors.registry).

    An import replaces, for its account, the billing periods its rows name, or else the UTC days (or,
    with `replace_granularity = "hour"`, the hours) its rows start in.
    """

    kind: str
    replace_granularity: str  # optional: "day" (default) or "hour"

    def parse(self, stream: BinaryIO, *, file_name: str) -> Iterator[UsageRow]:
        """Yield UsageRow objects from a binary stream; raise ProviderError on the first bad line."""


def csv_lines(reader, file_name: str) -> Iterator[tuple[str, object]]:
    """(where, row) for each row of a csv reader past its header, where = "<file> line N"; a malformed line
    raises ProviderError naming it instead of csv.Error."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            # A DictReader updates its own line_num only after a good row: the inner reader's is the line's.
            raise ProviderError(f"{file_name} line {getattr(reader, 'reader', reader).line_num}: {exc}") from None
        yield f"{file_name} line {reader.line_num}", row
