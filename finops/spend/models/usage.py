"""The fact table (one row per provider line), the tag sets its lines share, and the daily rollup every page reads."""

import hashlib
import json
import operator

import numpy as np
from django.contrib.postgres.indexes import BrinIndex
from django.db import models
from django.db.models import Q

from finops.core.rollup_keys import ROLLUP_FK
from finops.org.models.org import Team, Workload
from finops.performance.models.performance import LatencyCells
from finops.sources.models import Account, IngestRun, Provider

# NUMERIC(38, 18): provider amounts arrive with up to ~39 significant digits of which the
# meaningful ones sit well within 18 decimals of a dollar; whole amounts up to 10^20 fit.
MONEY = {"max_digits": 38, "decimal_places": 18}


class CostBasis(models.TextChoices):
    BILLED = "billed", "Billed"  # the provider's own amount: ground truth
    ESTIMATED = "estimated", "Estimated"  # tokens × catalog price of the day
    UNPRICED = "unpriced", "Unpriced"  # no price known: cost is null, never 0


class ChargeCategory(models.TextChoices):
    USAGE = "usage", "Usage"
    CREDIT = "credit", "Credit"
    TAX = "tax", "Tax"
    PURCHASE = "purchase", "Purchase"
    ADJUSTMENT = "adjustment", "Adjustment"


class TokenCounts(models.Model):
    """Token classes with one meaning across providers: the four input/output classes are disjoint.

    Signed: a FOCUS refund or correction row has a negative ConsumedQuantity, and nets the usage it corrects
    (every reader but FOCUS refuses a negative count)."""

    input_tokens = models.BigIntegerField(default=0, help_text="Uncached input tokens.")
    cached_input_tokens = models.BigIntegerField(default=0, help_text="Input tokens read from a cache.")
    cache_write_tokens = models.BigIntegerField(default=0, help_text="Input tokens written to a cache.")
    output_tokens = models.BigIntegerField(default=0)
    requests = models.BigIntegerField(default=0)

    class Meta:
        abstract = True


# One encoder for every call: json.dumps(..., sort_keys=True, separators=...) builds a new one each time.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_JSON_STRING = json.encoder.encode_basestring_ascii  # how _CANONICAL_JSON (ensure_ascii) writes a str


def tags_text(tags: dict) -> str:
    """The canonical JSON text of a tag set (sorted keys, no spaces): what its digest is taken of."""
    try:
        if all(type(key) is str and type(value) is str for key, value in tags.items()):
            # The same text, built directly (a per-resource FOCUS file has a tag set per resource and meter: the
            # encoder cost ~4× this). Sorted items are sorted keys (keys are unique); strings escaped by the
            # encoder's own function.
            j = _JSON_STRING
            return "{" + ",".join([f"{j(key)}:{j(value)}" for key, value in sorted(tags.items())]) + "}"
    except AttributeError:  # not a dict: the encoder says what it is
        pass
    return _CANONICAL_JSON(tags)


def tag_set_id(text: str) -> int:
    """A tag set's id: the first 8 bytes of the SHA-256 of its canonical text, as a signed bigint.

    Content-addressed, so a writer knows every id without asking the database; a collision (odds ~10^-8 at a
    million distinct sets) is detected when the set is stored and fails the run, never merges two sets.
    """
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


class TagSet(models.Model):
    """One distinct set of line tags, stored once.

    Lines repeat a few thousand tag sets; as a jsonb column on every line they cost COPY more than all other
    columns together (1M lines: 10.7 s against 4.5 s without them, bench on python-svc). Immutable: a set's
    id is its content's digest (`tag_set_id`).
    """

    id = models.BigIntegerField(primary_key=True)
    tags = models.JSONField(default=dict)

    def __str__(self):
        return tags_text(self.tags)


def signature_id(
    account_id: int,
    provider_id: int,
    project_ref: str,
    api_key_ref: str,
    user_ref: str,
    model: str,
    model_raw: str,
    tag_set_id: int,
) -> int:
    """A line signature's id: the first 8 bytes of the SHA-256 of its columns' canonical JSON, as a signed
    bigint (content-addressed like a tag set's, so a writer knows it without asking the database)."""
    if (
        type(account_id) is int
        and type(provider_id) is int
        and type(tag_set_id) is int
        and type(project_ref) is str
        and type(api_key_ref) is str
        and type(user_ref) is str
        and type(model) is str
        and type(model_raw) is str
    ):
        # The same text, built directly (a file of scattered keys has a signature per line: the encoder's ~5 µs
        # a call was a tenth of the import, and a generator over the strings' types a fifth of what was left).
        # Strings escaped by the encoder's own function; ints as it writes them.
        j = _JSON_STRING
        strings = f"{j(project_ref)},{j(api_key_ref)},{j(user_ref)},{j(model)},{j(model_raw)}"
        text = f"[{account_id},{provider_id},{strings},{tag_set_id}]"
    else:
        text = _CANONICAL_JSON(
            [account_id, provider_id, project_ref, api_key_ref, user_ref, model, model_raw, tag_set_id]
        )
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def signature_ids(
    account_id: int, provider_ids, project_ref: str, api_key_refs, user_refs, models, model_raws, tag_set_ids
):
    """signature_id of many signatures of one account and project (a gateway log's: it names no project), as an
    int64 array: the key columns one value a signature (ints or int arrays, strs). The same text as signature_id's,
    each distinct string escaped once (a scattered log has ~300 keys, 50 users and a few models for ~180k
    signatures), the texts assembled and digested by C loops (map): ~1 µs a signature, against ~6 µs for a
    signature_id call with the caches around it."""
    if type(account_id) is not int or type(project_ref) is not str:
        raise TypeError(f"account {account_id!r}, project {project_ref!r}")
    ints = [_ints(column) for column in (provider_ids, tag_set_ids)]
    texts = []
    for column in (api_key_refs, user_refs, models, model_raws):
        escaped = {value: _escaped(value) for value in set(column)}
        texts.append(map(escaped.__getitem__, column))
    n = len(ints[0])
    if any(len(column) != n for column in (ints[1], api_key_refs, user_refs, models, model_raws)):
        raise ValueError("signature_ids: columns of different lengths")
    head, project = f"[{account_id},", _JSON_STRING(project_ref)
    assembled = map(f"{head}{{}},{project},{{}},{{}},{{}},{{}},{{}}]".format, ints[0], *texts, ints[1])
    digests = b"".join(map(_DIGEST, map(hashlib.sha256, map(str.encode, assembled))))
    return np.frombuffer(digests, dtype=">i8").reshape(n, 4)[:, 0].astype(np.int64)


_DIGEST = operator.methodcaller("digest")


def _escaped(value) -> str:
    if type(value) is not str:
        raise TypeError(f"a signature's text column holds {value!r}")
    return _JSON_STRING(value)


def _ints(column) -> list[int]:
    """A column of ids as Python ints, as signature_id's text writes them (an int64 array's are)."""
    if isinstance(column, np.ndarray):
        if column.dtype != np.int64:
            raise TypeError(f"an id column of {column.dtype}")
        return column.tolist()
    if any(type(value) is not int for value in column):
        raise TypeError("an id column holding something else than ints")
    return column


class LineSignature(models.Model):
    """What attribution rules look at, stored once per distinct combination, with the workload and team the
    rules give it. Every usage line points at its signature.

    Lines equal on these columns are attributed alike, and ten million lines have a few thousand signatures:
    a rule change updates the signatures that move (thousands of rows), never the lines (millions; rewriting a
    fifth of them cost 163 s on the 10M-line bench). The columns repeat the line's own, with the same names, so
    `rule_q` applies to both tables. Immutable but for `workload` and `team` (see `signature_id`).
    """

    # No database-level foreign keys, as on the fact table (issue 23): a gateway log whose keys, users and teams
    # do not come together has a signature per line, and each FK was a deferred check per signature at commit.
    # Django applies on_delete itself (CASCADE, PROTECT, SET_NULL), and ingestion stores a signature's tag set
    # before it (ingest/keys.py).
    # Few indexes, for the same reason (issue 23, migration 0036): a signature's INSERT paid for five B-trees, half
    # its cost. Rules and re-attribution evaluate their CASE over every signature (a scan, never an index); what
    # looks signatures up by a column is a workload's or team's (a workload moving team, a page of a team's or a
    # workload's lines, their deletion's SET_NULL): those two are indexed where set, so an unattributed signature
    # costs no index at all. By account, provider or tag set only a deletion of one of those looks (rare, and a
    # scan of the table: account_delete deletes an account's signatures in one statement).
    id = models.BigIntegerField(primary_key=True)
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    provider = models.ForeignKey(
        Provider, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    project_ref = models.CharField(max_length=255, blank=True)
    api_key_ref = models.CharField(max_length=255, blank=True)
    user_ref = models.CharField(max_length=255, blank=True)
    model = models.CharField(max_length=200)
    model_raw = models.CharField(max_length=300)
    tag_set = models.ForeignKey(TagSet, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False)
    workload = models.ForeignKey(
        Workload,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    team = models.ForeignKey(
        Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False, db_index=False
    )

    class Meta:
        indexes = [
            models.Index(fields=["workload"], name="line_signature_workload_set", condition=Q(workload__isnull=False)),
            models.Index(fields=["team"], name="line_signature_team_set", condition=Q(team__isnull=False)),
        ]

    # The columns that make a signature, in `signature_id` order.
    KEY = ("account_id", "provider_id", "project_ref", "api_key_ref", "user_ref", "model", "model_raw", "tag_set_id")

    def __str__(self) -> str:
        return f"signature {self.pk}"

    def key(self) -> tuple:
        return tuple(getattr(self, name) for name in self.KEY)


# The fact table keeps no database-level foreign keys and a single BRIN index: every B-tree or FK trigger is
# paid per line at import (1M lines: ~3 s per B-tree, ~20 s of deferred FK checks at commit). Django still
# applies on_delete in Python, and ingestion only writes ids it has just read. Lines are found by
# (account, period), which a BRIN over both serves: an import writes one account's lines together, in time order.
_FACT_FK = {"db_constraint": False, "db_index": False, "related_name": "+"}


class BrinOnPostgres(BrinIndex):
    """BRIN on Postgres; a plain B-tree elsewhere (the demo's SQLite has no BRIN)."""

    def create_sql(self, model, schema_editor, using="", **kwargs):
        if schema_editor.connection.vendor != "postgresql":
            return models.Index.create_sql(self, model, schema_editor, using=using, **kwargs)
        return super().create_sql(model, schema_editor, using=using, **kwargs)


class UsageLine(TokenCounts):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, **_FACT_FK)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, **_FACT_FK)
    ingest_run = models.ForeignKey(IngestRun, on_delete=models.SET_NULL, null=True, blank=True, **_FACT_FK)
    period_start = models.DateTimeField(help_text="UTC, inclusive.")
    period_end = models.DateTimeField(help_text="UTC, exclusive.")
    model = models.CharField(max_length=200, help_text="Normalised model id (finops.core.modelids).")
    model_raw = models.CharField(max_length=300, help_text="The model string exactly as the provider sent it.")
    service_tier = models.CharField(max_length=32, blank=True)
    project_ref = models.CharField(max_length=255, blank=True, help_text="Project or workspace id.")
    api_key_ref = models.CharField(max_length=255, blank=True)
    user_ref = models.CharField(max_length=255, blank=True)
    tag_set = models.ForeignKey(TagSet, on_delete=models.PROTECT, **_FACT_FK)
    cost = models.DecimalField(**MONEY, null=True, blank=True, help_text="In `currency`, as given.")
    currency = models.CharField(max_length=3, default="USD")
    reporting_cost = models.DecimalField(
        **MONEY, null=True, blank=True, help_text="Cost in the reporting currency (dated FxRate)."
    )
    cost_basis = models.CharField(max_length=16, choices=CostBasis.choices)
    charge_category = models.CharField(max_length=16, choices=ChargeCategory.choices, default=ChargeCategory.USAGE)
    billing_period_start = models.DateTimeField(
        null=True,
        blank=True,
        help_text="FOCUS: the billing period the line belongs to; a re-import replaces the period.",
    )
    # Gateway logs only (issue 12): the line's requests' finops.performance.measures.Performance as columns
    # (finops.performance.measures.LINE_COLUMNS), null on every other line (a null costs a bit of the row's null
    # bitmap).
    errors = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Failed requests; null: no per-request data."
    )
    streamed_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    streamed_ms = models.PositiveBigIntegerField(null=True, blank=True)
    timed_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    timed_ms = models.PositiveBigIntegerField(null=True, blank=True)
    summary_requests = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Lines written before issue 12: their requests, known from a summary only."
    )
    summary_p99_ms = models.FloatField(null=True, blank=True, help_text="… and their slowest request (bounds the p99).")
    latency = LatencyCells(
        null=True, blank=True, help_text="Latency distributions as finops.performance.latency cells."
    )
    invoice_id = models.CharField(
        max_length=255,
        blank=True,
        default="",
        db_default="",
        help_text="FOCUS InvoiceId: the provider's invoice that carries the line, where its source names one.",
    )
    signature = models.ForeignKey(
        LineSignature,
        on_delete=models.CASCADE,
        help_text="What attribution looks at, and its workload and team.",
        **_FACT_FK,
    )

    class Meta:
        indexes = [
            BrinOnPostgres(fields=["account", "period_start"], autosummarize=True, name="usage_line_account_period")
        ]
        constraints = [
            models.CheckConstraint(condition=Q(period_end__gt=models.F("period_start")), name="usage_period_positive"),
            models.CheckConstraint(
                condition=(Q(cost_basis=CostBasis.UNPRICED, cost__isnull=True, reporting_cost__isnull=True))
                | (~Q(cost_basis=CostBasis.UNPRICED) & Q(cost__isnull=False, reporting_cost__isnull=False)),
                name="usage_unpriced_iff_no_cost",
            ),
        ]

    def __str__(self) -> str:
        return f"line {self.pk}: {self.model or 'no model'} {self.period_start:%Y-%m-%d %H:%M}"

    @property
    def tags(self) -> dict:
        return self.tag_set.tags

    @property
    def workload(self) -> Workload | None:
        return self.signature.workload

    @property
    def performance(self):
        """The line's finops.performance.measures.Performance, or None when it has no per-request data."""
        from finops.performance.measures import LINE_COLUMNS, Performance

        return Performance.of_line(self.requests, tuple(getattr(self, name) for name in LINE_COLUMNS))

    @property
    def team(self) -> Team | None:
        return self.signature.team


class RollupSums(TokenCounts):
    """What the daily and the monthly rollup hold alike, besides their period and foreign keys: the plain
    dimensions and the sums."""

    model = models.CharField(max_length=200)
    currency = models.CharField(max_length=3)
    cost_basis = models.CharField(max_length=16, choices=CostBasis.choices)
    charge_category = models.CharField(max_length=16, choices=ChargeCategory.choices)
    cost = models.DecimalField(**MONEY, null=True, blank=True)
    reporting_cost = models.DecimalField(**MONEY, null=True, blank=True)
    line_count = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class DailySpend(RollupSums):
    """day × account × provider × model × workload × team × currency × basis × category; equals the raw lines."""

    day = models.DateField()
    # No single-column index: each key leads one of the (key, day) indexes below (a rebuild pays every index per row).
    account = models.ForeignKey(Account, on_delete=models.CASCADE, db_index=False, **ROLLUP_FK)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, db_index=False, **ROLLUP_FK)
    workload = models.ForeignKey(
        Workload, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK
    )
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, db_index=False, **ROLLUP_FK)

    class Meta:
        indexes = [
            models.Index(fields=["day"]),
            models.Index(fields=["team", "day"]),
            models.Index(fields=["workload", "day"]),
            models.Index(fields=["account", "day"]),
            # The provider page and Explore's provider filter; Explore's model filter and its list of models.
            models.Index(fields=["provider", "day"], name="dailyspend_provider_day"),
            models.Index(fields=["model", "day"], name="dailyspend_model_day"),
            # The overview's unattributed spend by day (its other sums read TeamDailySpend): ~4 % of the rows at
            # 10M lines; the planner took the day index and filtered 127k rows away for them (51 ms against 7 ms).
            # It carries the columns that read groups and sums, so it is an index-only scan: those rows lie one or
            # two to a heap page (60 days: 1,700–3,700 pages by the plan, 26 index pages; issue 23). `team` too: a
            # team lead's overview filters those rows by their teams, and without it fetched every unattributed
            # row's heap page to find none of theirs (3,391 buffers for no row at 2M lines).
            models.Index(
                fields=["day"],
                condition=Q(workload__isnull=True),
                include=["provider", "charge_category", "reporting_cost", "team"],
                name="dailyspend_unattributed_sums",
            ),
            # Shared charges (tax, fees, support, credits: finops.spend.selectors.shared_charges) by day, for the
            # teams page, a team's page, the unattributed page and the report: a handful of rows a day among
            # thousands of usage rows, which the planner otherwise found through the team index's NULLs, visiting
            # every unattributed row's heap page of the year (issue 23: the teams page's costliest read). Carries what
            # that read filters, groups and sums, so it is an index-only scan of a small index.
            models.Index(
                fields=["day"],
                condition=~Q(charge_category=ChargeCategory.USAGE) & Q(reporting_cost__isnull=False),
                include=["team", "account", "charge_category", "reporting_cost"],
                name="dailyspend_shared_charges",
            ),
        ]

    def __str__(self) -> str:
        return f"spend {self.day} account {self.account_id} workload {self.workload_id}"
