"""Writes on outcome counts (issue 12): the ONE path used by the API, the upload form and `import_outcomes`.

A batch is all or nothing: every row is validated first, and one bad row rejects the whole batch with every
problem named by its row number ("row 3: unknown workload 'x'"); nothing is applied. A good batch is upserted in
one transaction: a count for a workload × day × source already stored is REPLACED (a correction), never added to.
Two sources for the same workload and day are separate rows that add up.

Idempotency: a batch sent with an `idempotency_key` already applied changes nothing and answers the earlier
result (its row count) marked `replay`. A rejected batch does not use up its key: fix it and send it again.
A key belongs to its sender (`by`: the user, signed in or through any of their tokens), so another user's same
key never collides; the same key sent again with different rows is refused (IdempotencyConflict, the API's 409)
rather than answered as a replay that would drop the new rows.

Who writes: finops.core.access.writable_outcome_workloads (admins any workload; members their teams'; finance none).
A workload the writer may not even see is "unknown" (not confirmed to exist, invariant 9). `by=None` is the
operator (the `import_outcomes` command), trusted like config as code.
"""

import codecs
import csv
import datetime as dt
import hashlib
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from finops.alerts.services.spend_changes import spend_changed
from finops.core import access
from finops.core.text import storable
from finops.models import OutcomeBatch, OutcomeCount, Workload
from finops.performance.services.reported_rows import BatchInvalid, BatchResult, source_of, whole
from finops.web.batch_limits import rows_refusal

FIELDS = {"workload", "day", "count", "source"}
REQUIRED = ("workload", "day", "count")
KEY_MAX = OutcomeBatch._meta.get_field("idempotency_key").max_length
BATCH_SIZE = 5000
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class OutcomesInvalid(BatchInvalid):
    """The batch was rejected; nothing was applied. `errors`: one line per problem, "row N: …"."""


class IdempotencyConflict(Exception):
    """The sender already applied other rows under this idempotency key; nothing was applied."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(
            f"idempotency key {key!r} was already used for a different batch: nothing was applied. "
            "Send these rows with a new key (or the first rows again to replay them)."
        )


@dataclass(frozen=True)
class OutcomeResult(BatchResult):
    replay: bool = False  # the idempotency key was seen before: nothing was applied

    def as_dict(self) -> dict:
        return {**super().as_dict(), "replay": self.replay}


def outcomes_record(
    *,
    by,
    rows: Iterable[dict],
    idempotency_key: str | None = None,
    source_default: str = "",
    row_numbers: list[int] | None = None,
) -> OutcomeResult:
    """Validate every row, then upsert them all in one transaction. `row_numbers` name the rows in errors (a CSV
    passes its line numbers); by default rows are numbered from 1."""
    if by is not None and not access.writable_outcome_workloads(by).exists():
        raise PermissionDenied("You may not write outcome counts.")  # before the key: a replay is a write too
    rows = list(rows)
    if by is not None and (refusal := rows_refusal(len(rows))):
        raise OutcomesInvalid([refusal])  # the operator's `import_outcomes` (by=None) has no limit
    digest = None
    if idempotency_key is not None:
        idempotency_key, digest = _key(idempotency_key), _digest(rows, source_default)
        if (earlier := _earlier(by, idempotency_key, digest)) is not None:
            return earlier
    numbers = row_numbers or list(range(1, len(rows) + 1))
    try:
        source_default = source_of(source_default, "default source")
    except ValueError as exc:
        raise OutcomesInvalid([str(exc)]) from None
    clean = _validate(by, rows, numbers, source_default)
    try:
        with transaction.atomic():
            if idempotency_key is not None:
                # Inside the transaction: a concurrent post of the same key waits on the unique index, then fails
                # here and is answered as the replay (or the conflict) it is.
                OutcomeBatch.objects.create(
                    idempotency_key=idempotency_key, sender=by, body_digest=digest, rows=len(clean)
                )
            return _upsert(clean)
    except IntegrityError:
        if idempotency_key is not None and (earlier := _earlier(by, idempotency_key, digest)) is not None:
            return earlier
        raise


def _digest(rows: list, source_default: str) -> str:
    """The batch as sent (rows and the default source), whatever their validity: the same body, the same digest."""
    body = json.dumps([rows, source_default], sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=True)
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def _earlier(by, key: str, digest: str) -> OutcomeResult | None:
    """The replay of the sender's batch under `key`; IdempotencyConflict if that batch had other rows."""
    earlier = OutcomeBatch.objects.filter(sender=by, idempotency_key=key).first()
    if earlier is None:
        return None
    if earlier.body_digest and earlier.body_digest != digest:
        raise IdempotencyConflict(key)
    return OutcomeResult(rows=earlier.rows, replay=True)


def _key(value) -> str:
    if not isinstance(value, str) or not value.strip() or not storable(value):
        raise OutcomesInvalid(["idempotency key: must be non-empty text (no NUL or lone surrogate characters)"])
    if len(value.strip()) > KEY_MAX:
        raise OutcomesInvalid([f"idempotency key: at most {KEY_MAX} characters"])
    return value.strip()


def _validate(by, rows: list, numbers: list[int], source_default: str) -> list[tuple[int, dt.date, str, int]]:
    if not rows:
        raise OutcomesInvalid(["the batch has no rows"])
    slugs = {
        r.get("workload")
        for r in rows
        if isinstance(r, dict) and isinstance(r.get("workload"), str) and storable(r["workload"])
    }
    # Workloads the writer may not see answer "unknown", like a 404; seen but not writable says so.
    visible = Workload.objects.all() if by is None else access.visible_workloads(by)
    writable = Workload.objects.all() if by is None else access.writable_outcome_workloads(by)
    writable = set(writable.filter(slug__in=slugs).values_list("slug", flat=True))
    ids = dict(visible.filter(slug__in=slugs).values_list("slug", "id"))
    today = timezone.now().astimezone(dt.UTC).date()
    errors: list[str] = []
    clean = []
    seen: dict[tuple, int] = {}
    for number, row in zip(numbers, rows, strict=True):
        problems = []
        if not isinstance(row, dict):
            errors.append(f"row {number}: expected an object with workload, day and count")
            continue
        if unknown := sorted(set(row) - FIELDS, key=str):
            problems.append(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(repr(u) for u in unknown)}")
        if missing := [f for f in REQUIRED if row.get(f) in (None, "")]:
            problems.append(f"missing {', '.join(missing)}")
        slug, day, count = row.get("workload"), row.get("day"), row.get("count")
        if slug not in (None, ""):
            if not isinstance(slug, str) or slug not in ids:
                problems.append(f"unknown workload {slug!r}")
            elif slug not in writable:
                problems.append(f"you may not write outcomes for workload {slug!r}")
        if day not in (None, ""):
            day = _day(day, today, problems)
        if count not in (None, ""):
            count = whole(count, "count", problems)
        try:
            source = source_of(row.get("source"), "source") or source_default
        except ValueError as exc:
            problems.append(str(exc))
            source = ""
        if not problems:
            key = (slug, day, source)
            if key in seen:
                problems.append(
                    f"repeats row {seen[key]} (workload {slug!r}, day {day}, source {source!r}): "
                    "send one count per workload, day and source"
                )
            else:
                seen[key] = number
        if problems:
            errors.append(f"row {number}: {'; '.join(problems)}")
        else:
            clean.append((ids[slug], day, source, count))
    if errors:
        raise OutcomesInvalid(errors)
    return clean


def _day(value, today: dt.date, problems: list[str]) -> dt.date | None:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        day = value
    elif isinstance(value, str) and DAY.fullmatch(value.strip()):
        try:
            day = dt.date.fromisoformat(value.strip())
        except ValueError:
            problems.append(f"bad date {value!r} (no such day)")
            return None
    else:
        problems.append(f"bad date {value!r} (expected YYYY-MM-DD)")
        return None
    if day > today:
        problems.append(f"day {day} is in the future (today is {today}, UTC)")
        return None
    return day


def _upsert(clean: list[tuple[int, dt.date, str, int]]) -> OutcomeResult:
    """Compare with what is stored (to report created / replaced / unchanged), then write only what differs."""
    workload_ids = {w for w, _, _, _ in clean}
    days = [d for _, d, _, _ in clean]
    stored = {
        (w, d, s): c
        for w, d, s, c in OutcomeCount.objects.filter(
            workload_id__in=workload_ids, day__gte=min(days), day__lte=max(days)
        ).values_list("workload_id", "day", "source", "count")
    }
    created = replaced = unchanged = 0
    writes = []
    for workload_id, day, source, count in clean:
        before = stored.get((workload_id, day, source))
        if before is None:
            created += 1
        elif before == count:
            unchanged += 1
            continue
        else:
            replaced += 1
        writes.append(OutcomeCount(workload_id=workload_id, day=day, source=source, count=count))
    OutcomeCount.objects.bulk_create(
        writes,
        batch_size=BATCH_SIZE,
        update_conflicts=True,
        unique_fields=["workload", "day", "source"],
        update_fields=["count", "updated_at"],
    )
    if writes:
        # Cost per outcome changed for these workloads and days: the same after-commit evaluation a spend change
        # queues (the outcome-cost alert judges the months these days fall in).
        spend_changed(days={w.day for w in writes}, reason="outcomes", workload_ids={w.workload_id for w in writes})
    return OutcomeResult(rows=len(clean), created=created, replaced=replaced, unchanged=unchanged)


# --- CSV: one reader for the command and the upload form ---

CSV_COLUMNS = "workload,day,count[,source]"


def outcome_rows_from_csv(stream, *, workload: str | None = None) -> tuple[list[dict], list[int]]:
    """Rows (as `outcomes_record` takes them) and their line numbers from a CSV with a header line. `stream`: lines
    of text, or of bytes (an upload; read as UTF-8, a BOM allowed). With `workload` (the upload on a workload page)
    the workload column may be left out, and every row must name that workload."""
    if not isinstance(stream, io.TextIOBase):
        stream = codecs.iterdecode(stream, "utf-8-sig")
    try:
        reader = csv.reader(stream)
        header = next(reader, None)
        if header is None:
            raise OutcomesInvalid([f"the file is empty: expected a header line {CSV_COLUMNS}"])
        columns = [c.strip().lstrip("\ufeff").lower() for c in header]
        required = [c for c in REQUIRED if not (c == "workload" and workload)]
        problems = []
        if unknown := [c for c in columns if c not in FIELDS]:
            problems.append(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(repr(c) for c in unknown)}")
        if missing := [c for c in required if c not in columns]:
            problems.append(f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        if len(set(columns)) != len(columns):
            problems.append("a column is named twice")
        if problems:
            raise OutcomesInvalid([f"row 1 (the header): {'; '.join(problems)}; expected {CSV_COLUMNS}"])
        rows, numbers, errors = [], [], []
        for record in reader:
            if not any(v.strip() for v in record):
                continue  # a blank line
            if len(record) != len(columns):
                errors.append(f"row {reader.line_num}: {len(record)} values for {len(columns)} columns")
                continue
            row = dict(zip(columns, record))
            if workload:
                named = row.setdefault("workload", workload)
                if named != workload:
                    errors.append(f"row {reader.line_num}: workload {named!r}: this form takes {workload!r} only")
                    continue
            rows.append(row)
            numbers.append(reader.line_num)
    except UnicodeDecodeError:
        raise OutcomesInvalid(["the file is not UTF-8 text"]) from None
    except csv.Error as exc:
        raise OutcomesInvalid([f"row {reader.line_num}: not readable as CSV ({exc})"]) from None
    if errors:
        raise OutcomesInvalid(errors)
    return rows, numbers


def outcomes_import_csv(*, by, stream, source_default: str = "", workload: str | None = None) -> OutcomeResult:
    """Read a CSV and record it as one batch: the upload form and `import_outcomes` call this."""
    rows, numbers = outcome_rows_from_csv(stream, workload=workload)
    if not rows:
        raise OutcomesInvalid(["the file has a header but no rows"])
    return outcomes_record(by=by, rows=rows, row_numbers=numbers, source_default=source_default)
