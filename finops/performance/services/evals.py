"""Writes of eval scores (issue 12): `POST /api/v1/evals`, a named quality score of a workload on a provider and
model over a period, read beside cost by finops.performance.selectors.evals. docs/performance.md, "Eval scores".

A row: `{workload, provider, model, name, score, period | period_start [+ period_end], source?}`.

Decisions:
- The period is UTC days, half-open like every period of the product: `period: "2026-11"` (a calendar month),
  `period: "2026Q4"` or `"2026-Q4"` (a calendar quarter), or `period_start` and `period_end` (YYYY-MM-DD, the end
  EXCLUDED: an eval of November is 2026-11-01 → 2026-12-01); `period_start` alone is that one day (an eval run).
  A period may run into the future (this quarter's score, so far) but may not start after today.
- `score`: a decimal, as a JSON number or a string, stored exactly (at most 6 decimal places and 14 digits before
  the point; more would be rounded, so it is refused, as are NaN and infinities). No scale is imposed (0–1, 0–100
  and pass rates are all seen); one eval name should keep one scale, since scores of a name are compared.
- `model` is normalised like usage lines (finops.core.modelids), so a score meets the spend of the same model.
- A later score for the same workload, provider, model, name and period replaces the earlier one (a re-run or
  a correction); `source` is kept with it but is not part of that key (two tools scoring the same eval under the
  same name would otherwise both be "the" score). Posting the same batch twice leaves the same state.
- Scores change neither spend nor alerts: no signal is queued.
"""

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from finops.core.reporting_period import PeriodError, resolve
from finops.core.text import storable
from finops.models import EvalScore
from finops.performance.services import reported_rows as rr
from finops.web.batch_limits import rows_refusal

FIELDS = {"workload", "provider", "model", "name", "score", "period", "period_start", "period_end", "source"}
REQUIRED = ("workload", "provider", "model", "name", "score")
NAME_MAX = EvalScore._meta.get_field("name").max_length
PLACES = EvalScore._meta.get_field("score").decimal_places
DIGITS = EvalScore._meta.get_field("score").max_digits
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
MONTH = re.compile(r"\d{4}-\d{2}")
QUARTER = re.compile(r"(\d{4})-?Q([1-4])", re.IGNORECASE)
BATCH_SIZE = 2000


class EvalsInvalid(rr.BatchInvalid):
    """The eval-score batch was rejected; nothing was applied."""


@dataclass(frozen=True)
class _Clean:
    workload_id: int
    provider_id: int
    model: str
    name: str
    period_start: dt.date
    period_end: dt.date
    score: Decimal
    source: str


def named_period(value: str) -> tuple[dt.date, dt.date]:
    """[start, end) of a month ("2026-11") or a quarter ("2026Q4", "2026-Q4"); PeriodError otherwise. The API's
    `?quarter=` reads through here too."""
    text = value.strip() if isinstance(value, str) else ""
    if match := QUARTER.fullmatch(text):
        text = f"{match[1]}-Q{match[2]}"
    elif not MONTH.fullmatch(text):
        raise PeriodError(f"{value!r} is neither a month (2026-11) nor a quarter (2026Q4)")
    period = resolve(text, today=dt.date.today())  # a month or a quarter: `today` is not read
    return period.start, period.end


def evals_record(*, by, rows: Iterable[dict], source_default: str = "") -> rr.BatchResult:
    """Validate every row, then upsert them all in one transaction."""
    rr.check_writer(by, "eval scores")
    rows = list(rows)
    if by is not None and (refusal := rows_refusal(len(rows))):
        raise EvalsInvalid([refusal])
    try:
        source_default = rr.source_of(source_default, "default source")
    except ValueError as exc:
        raise EvalsInvalid([str(exc)]) from None
    clean = _validate(by, rows, source_default)
    with transaction.atomic():
        return _upsert(clean)


def _validate(by, rows: list, source_default: str) -> list[_Clean]:
    targets = rr.Targets(by, rows, "eval scores")
    today = timezone.now().astimezone(dt.UTC).date()
    return rr.validated(
        rows,
        expected="workload, provider, model, name, score and a period",
        invalid=EvalsInvalid,
        clean_row=lambda row, problems: _row(row, targets, today, source_default, problems),
        key=lambda c: (c.workload_id, c.provider_id, c.model, c.name, c.period_start, c.period_end),
        describe=lambda row, c: (
            f"workload {row['workload']!r}, provider {row['provider']!r}, model {c.model!r}, "
            f"eval {c.name!r}, {c.period_start} → {c.period_end}"
        ),
    )


def _row(row: dict, targets: rr.Targets, today: dt.date, source_default: str, problems: list[str]) -> _Clean | None:
    rr.row_shape(row, FIELDS, REQUIRED, problems)
    present = lambda name: row.get(name) not in (None, "")  # noqa: E731
    workload = targets.workload(row["workload"], problems) if present("workload") else None
    provider = targets.provider(row["provider"], problems) if present("provider") else None
    model = rr.model_of(row["model"], problems) if present("model") else None
    name = _name(row["name"], problems) if present("name") else None
    score = _score(row["score"], problems) if present("score") else None
    period = _period(row, today, problems)
    try:
        source = rr.source_of(row.get("source"), "source") or source_default
    except ValueError as exc:
        problems.append(str(exc))
        return None
    if problems:
        return None
    return _Clean(workload, provider, model, name, *period, score, source)


def _name(value, problems: list[str]) -> str | None:
    if not isinstance(value, str) or not value.strip() or not storable(value):
        problems.append(f"name: {value!r} is not an eval name")
        return None
    if len(value.strip()) > NAME_MAX:
        problems.append(f"name: at most {NAME_MAX} characters")
        return None
    return value.strip()


def _score(value, problems: list[str]) -> Decimal | None:
    score = rr.decimal_of(value, "score", problems)
    if score is None:
        return None
    if score and score.adjusted() >= DIGITS - PLACES:  # first: quantizing a huge number would overflow
        problems.append(f"score: {value!r} is too large (at most {DIGITS - PLACES} digits before the point)")
        return None
    if score.as_tuple().exponent < -PLACES and score != score.quantize(Decimal(1).scaleb(-PLACES)):
        problems.append(f"score: {value!r} has more than {PLACES} decimal places (it would be rounded)")
        return None
    return score


def _period(row: dict, today: dt.date, problems: list[str]) -> tuple[dt.date, dt.date] | None:
    named, start, end = row.get("period"), row.get("period_start"), row.get("period_end")
    if named not in (None, ""):
        if start not in (None, "") or end not in (None, ""):
            problems.append("period: give either period or period_start (and period_end), not both")
            return None
        try:
            first, stop = named_period(named)
        except PeriodError as exc:
            problems.append(f"period: {exc}")
            return None
    elif start not in (None, ""):
        first = _day(start, "period_start", problems)
        stop = _day(end, "period_end", problems) if end not in (None, "") else None
        if first is None or (end not in (None, "") and stop is None):
            return None
        stop = stop or first + dt.timedelta(days=1)
        if stop <= first:
            problems.append(f"period_end: {stop} must be after period_start {first} (the end day is excluded)")
            return None
    else:
        problems.append('missing period (a month "2026-11", a quarter "2026Q4", or period_start and period_end)')
        return None
    if first > today:
        problems.append(f"period: starts {first}, after today ({today}, UTC)")
        return None
    return first, stop


def _day(value, field: str, problems: list[str]) -> dt.date | None:
    if isinstance(value, str) and DAY.fullmatch(value.strip()):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    problems.append(f"{field}: {value!r} is not a date (YYYY-MM-DD)")
    return None


def _upsert(clean: list[_Clean]) -> rr.BatchResult:
    stored = {
        (w, p, m, n, s, e): (score, source)
        for w, p, m, n, s, e, score, source in EvalScore.objects.filter(
            workload_id__in={c.workload_id for c in clean},
            name__in={c.name for c in clean},
        ).values_list("workload_id", "provider_id", "model", "name", "period_start", "period_end", "score", "source")
    }
    created = replaced = unchanged = 0
    written = []
    for c in clean:
        before = stored.get((c.workload_id, c.provider_id, c.model, c.name, c.period_start, c.period_end))
        if before is None:
            created += 1
        elif before == (c.score, c.source):
            unchanged += 1
            continue
        else:
            replaced += 1
        written.append(
            EvalScore(
                workload_id=c.workload_id,
                provider_id=c.provider_id,
                model=c.model,
                name=c.name,
                period_start=c.period_start,
                period_end=c.period_end,
                score=c.score,
                source=c.source,
            )
        )
    EvalScore.objects.bulk_create(
        written,
        batch_size=BATCH_SIZE,
        update_conflicts=True,
        unique_fields=["workload", "provider", "model", "name", "period_start", "period_end"],
        update_fields=["score", "source", "updated_at"],
    )
    return rr.BatchResult(rows=len(clean), created=created, replaced=replaced, unchanged=unchanged)
