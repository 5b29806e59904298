"""What the intakes of business and measurement rows share (issue 12): reported metrics
(finops.performance.services.metrics) and eval scores (finops.performance.services.evals) validate their batches alike,
as outcome counts do (finops.performance.services.outcomes): every row is checked before anything is written, every
problem is named by its row number and field, and one bad row rejects the whole batch.

Who writes: finops.core.access.writable_reported_workloads (admins any workload, members their teams', finance none).
A workload the writer may not see is "unknown" (not confirmed to exist, docs/architecture.md invariant 9); one it sees
but
may not write says so. `by=None` is the operator or the demo, trusted like config as code.
"""

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.core.exceptions import PermissionDenied

from finops.core import access
from finops.core.modelids import normalise_model
from finops.core.text import control_character, storable
from finops.models import Provider, Workload

ERRORS_SHOWN = 50  # a batch with a wrong field in every row should not answer thousands of lines
WHOLE_MAX = 2**63 - 1  # PositiveBigIntegerField, and the JSON counts of a Performance
MODEL_MAX = 200
SOURCE_MAX = 64
LATENCY_MAX_MS = 86_400_000  # a day: no request's latency is longer; a larger figure is a unit mistake


class BatchInvalid(Exception):
    """The batch was rejected; nothing was applied. `errors`: one line per problem, "row N: …"."""

    def __init__(self, errors: list[str]):
        if len(errors) > ERRORS_SHOWN:
            errors = errors[:ERRORS_SHOWN] + [f"… and {len(errors) - ERRORS_SHOWN} more problems"]
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class BatchResult:
    """What a batch did: rows created, replaced (the stored figures changed) and unchanged (restated)."""

    rows: int
    created: int = 0
    replaced: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict:
        return {"rows": self.rows, "created": self.created, "replaced": self.replaced, "unchanged": self.unchanged}


def check_writer(by, what: str) -> None:
    if by is not None and not access.writable_reported_workloads(by).exists():
        raise PermissionDenied(f"You may not write {what}.")


class Targets:
    """The workloads and providers a batch names, looked up once for all its rows."""

    def __init__(self, by, rows: list, what: str):
        slugs = {
            r.get("workload")
            for r in rows
            if isinstance(r, dict) and isinstance(r.get("workload"), str) and storable(r["workload"])
        }
        visible = Workload.objects.all() if by is None else access.visible_workloads(by)
        writable = Workload.objects.all() if by is None else access.writable_reported_workloads(by)
        self.what = what
        self.ids = dict(visible.filter(slug__in=slugs).values_list("slug", "id"))
        self.writable = set(writable.filter(slug__in=slugs).values_list("slug", flat=True))
        providers = {
            r.get("provider")
            for r in rows
            if isinstance(r, dict) and isinstance(r.get("provider"), str) and storable(r["provider"])
        }
        self.providers = dict(Provider.objects.filter(slug__in=providers).values_list("slug", "id"))

    def workload(self, slug, problems: list[str]) -> int | None:
        if not isinstance(slug, str) or slug not in self.ids:
            problems.append(f"workload: unknown workload {slug!r}")
            return None
        if slug not in self.writable:
            problems.append(f"workload: you may not write {self.what} for workload {slug!r}")
            return None
        return self.ids[slug]

    def provider(self, slug, problems: list[str]) -> int | None:
        if not isinstance(slug, str) or slug not in self.providers:
            problems.append(f"provider: unknown provider {slug!r} (a provider's slug, as GET /api/v1/providers lists)")
            return None
        return self.providers[slug]


def row_shape(row, fields: set[str], required: tuple[str, ...], problems: list[str]) -> None:
    """Unknown fields (a typo should not vanish) and missing ones."""
    if unknown := sorted(set(row) - fields, key=str):
        problems.append(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(repr(u) for u in unknown)}")
    if missing := [f for f in required if row.get(f) in (None, "")]:
        problems.append(f"missing {', '.join(missing)}")


def model_of(value, problems: list[str]) -> str | None:
    """The normalised model id (finops.core.modelids), as usage lines store it, so metrics and scores meet spend."""
    if not isinstance(value, str) or not value.strip() or not storable(value):
        problems.append(f"model: {value!r} is not a model id")
        return None
    if found := control_character(value):
        problems.append(f"model: {value!r} contains {found}; a model name may not hold control characters")
        return None
    model = normalise_model(value)
    if len(model) > MODEL_MAX:
        problems.append(f"model: at most {MODEL_MAX} characters")
        return None
    return model


def source_of(value, where: str = "source") -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where}: must be text")
    if not storable(value):
        raise ValueError(f"{where}: no NUL or lone surrogate characters")
    value = value.strip()
    if len(value) > SOURCE_MAX:
        raise ValueError(f"{where}: at most {SOURCE_MAX} characters")
    return value


def whole(value, field: str, problems: list[str]) -> int | None:
    """A whole number ≥ 0 (a JSON integer, or digits in a string)."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
        number = int(value.strip())
    else:
        number = None
    if number is None:
        problems.append(f"{field}: {value!r} is not a whole number")
    elif number < 0:
        problems.append(f"{field}: {number} is negative")
        number = None
    elif number > WHOLE_MAX:
        problems.append(f"{field}: {number} is too large")
        number = None
    return number


def decimal_of(value, field: str, problems: list[str]) -> Decimal | None:
    """A finite decimal from a JSON number or a string, exactly as written ("0.93", 0.93 and 93 are all fine;
    a float is read by its shortest repr, so 0.93 stays 0.93)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        problems.append(f"{field}: {value!r} is not a number")
        return None
    try:
        number = Decimal(str(value).strip() if not isinstance(value, float) else repr(value))
    except InvalidOperation:
        problems.append(f"{field}: {value!r} is not a number")
        return None
    if not number.is_finite():
        problems.append(f"{field}: {value!r} is not a finite number")
        return None
    return number


def milliseconds(value, field: str, problems: list[str]) -> float | None:
    """A latency in ms, 0 to a day (a JSON number or a numeric string)."""
    number = decimal_of(value, field, problems)
    if number is None:
        return None
    if number < 0:
        problems.append(f"{field}: {value!r} is negative")
        return None
    if number > LATENCY_MAX_MS:
        problems.append(f"{field}: {value!r} ms is over a day (latencies are in milliseconds)")
        return None
    return float(number)


def duplicate(seen: dict, key: tuple, number: int, what: str, problems: list[str]) -> None:
    if key in seen:
        problems.append(f"repeats row {seen[key]} ({what}): send one per key")
    else:
        seen[key] = number


def validated(rows: list, *, expected: str, clean_row, key, describe, invalid: type[BatchInvalid]) -> list:
    """Every row checked before anything is written (the loop metrics and evals share): `clean_row(row, problems)`
    reads one row (None, with problems, when it cannot); `key(found)` is what may appear once in a batch and
    `describe(row, found)` how the duplicate is named. Raises `invalid` with every problem, "row N: …"."""
    if not rows:
        raise invalid(["the batch has no rows"])
    errors, clean, seen = [], [], {}
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            errors.append(f"row {number}: expected an object with {expected}")
            continue
        problems: list[str] = []
        found = clean_row(row, problems)
        if found is not None:
            duplicate(seen, key(found), number, describe(row, found), problems)
        if problems:
            errors.append(f"row {number}: {'; '.join(problems)}")
        else:
            clean.append(found)
    if errors:
        raise invalid(errors)
    return clean
