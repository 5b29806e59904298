"""The what-if calculator (issue 13): what a month of a workload's traffic would cost, and how fast it would be
answered, on each offering. Pure: figures in, results out (no ORM); exact Decimal arithmetic throughout.

Formulas (docs/whatif.md):
- **Monthly cost** = (uncached input × input price + cached input × cached-input price + output × output price)
  ÷ 10⁶, less the discount of a contract covering the provider. Input tokens are ALL input tokens, the cached ones
  included (`cached_input_tokens` is the part of them read from the prompt cache). A cached-input price missing:
  cached tokens are charged at the input price (what providers without a cache discount bill). An offering with
  only a blended price: (input + output) × blended ÷ 10⁶. Neither: the cost is unknown and the missing figure is
  named, never guessed.
- **Latency per request** = time to first token + output tokens per request ÷ output tokens per second. An
  unknown time to first token counts as 0 and the latency is a lower bound (`latency_lower_bound`); an unknown
  speed leaves the latency unknown.
- **Latency SLA**: meets when latency ≤ SLA (a lower bound that already exceeds the SLA fails for certain).
- **Batch window**: the month's requests are spread evenly over DAYS_PER_MONTH nights and run BATCH_CONCURRENCY at
  a time, each taking the latency above; a night's work takes requests per night × latency ÷ concurrency, and
  meets when that fits the window. The assumption is returned with every batch verdict (`BATCH_ASSUMPTION`).
- **Context fit**: input per request + output per request ≤ the context window (unknown window: unknown).
- **Against today**: (cost − today's cost) ÷ today's cost, when today's cost is known.
Ordering: cheapest known cost first, unknown costs last; ties by latency, then provider and model.
"""

from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal

MTOK = Decimal(1_000_000)
HUNDRED = Decimal(100)
DAYS_PER_MONTH = 30
BATCH_CONCURRENCY = 100
SECONDS_PER_HOUR = 3600
BATCH_ASSUMPTION = (
    f"the month's requests spread evenly over {DAYS_PER_MONTH} nights, {BATCH_CONCURRENCY} requests in flight at a time"
)


class ProfileInvalid(ValueError):
    """A profile that cannot be computed; `field` names the option at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Profile:
    """A month of traffic: token options are monthly totals; `input_tokens` includes `cached_input_tokens`."""

    requests: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    sla_seconds: Decimal | None = None
    batch_window_hours: Decimal | None = None
    label: str = ""

    def __post_init__(self):
        for name in ("requests", "input_tokens", "output_tokens", "cached_input_tokens"):
            value = getattr(self, name)
            if value is None or value < 0:
                raise ProfileInvalid(name, "must be a whole number ≥ 0")
        if self.requests == 0:
            raise ProfileInvalid("requests", "must be at least 1")
        if self.cached_input_tokens > self.input_tokens:
            raise ProfileInvalid(
                "cached_input_tokens", "cannot exceed input_tokens (cached tokens are part of the input)"
            )
        if self.sla_seconds is not None and self.batch_window_hours is not None:
            raise ProfileInvalid("batch_window_hours", "give a latency SLA or a batch window, not both")
        if self.sla_seconds is not None and self.sla_seconds <= 0:
            raise ProfileInvalid("sla_seconds", "must be greater than 0")
        if self.batch_window_hours is not None and not 0 < self.batch_window_hours <= 24:
            raise ProfileInvalid("batch_window_hours", "must be more than 0 and at most 24")

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cached_input_tokens

    @property
    def output_per_request(self) -> Decimal:
        return Decimal(self.output_tokens) / self.requests

    @property
    def tokens_per_request(self) -> Decimal:
        return Decimal(self.input_tokens + self.output_tokens) / self.requests


@dataclass(frozen=True)
class Figure:
    """One figure of an offering and where it came from ("catalog from 2024-01-01", "measured …", "entered")."""

    value: Decimal | None
    source: str = ""


@dataclass(frozen=True)
class OfferingFigures:
    provider: str  # slug
    model: str
    family: str
    input_per_mtok: Figure = Figure(None)
    cached_input_per_mtok: Figure = Figure(None)
    output_per_mtok: Figure = Figure(None)
    blended_per_mtok: Figure = Figure(None)
    output_tokens_per_s: Figure = Figure(None)
    ttft_seconds: Figure = Figure(None)
    context_window: int | None = None
    discount_pct: Decimal = Decimal(0)  # a contract's discount off the prices above
    provider_name: str = ""


@dataclass(frozen=True)
class Result:
    offering: OfferingFigures
    monthly_cost: Decimal | None
    latency_seconds: Decimal | None
    latency_lower_bound: bool
    meets_sla: bool | None
    sla_kind: str  # latency | batch | none
    batch_hours_per_night: Decimal | None = None
    fits_context: bool | None = None
    versus_today: Decimal | None = None
    saving: Decimal | None = None  # today's cost − this cost
    missing: tuple[str, ...] = field(default=())
    best: bool = False

    @property
    def provider(self) -> str:
        return self.offering.provider

    @property
    def model(self) -> str:
        return self.offering.model

    @property
    def family(self) -> str:
        return self.offering.family

    def as_json(self) -> dict:
        """The command's and the API's shape: decimals as strings, meets_sla true/false/null."""
        return {
            "provider": self.provider,
            "model": self.model,
            "family": self.family,
            "monthly_cost": _text(self.monthly_cost, Decimal("0.01")),
            "latency_seconds": _text(self.latency_seconds, Decimal("0.01")),
            "meets_sla": self.meets_sla,
        }


def _text(value: Decimal | None, quantum: Decimal) -> str | None:
    return None if value is None else str(value.quantize(quantum, rounding=ROUND_HALF_UP))


def monthly_cost(profile: Profile, offering: OfferingFigures) -> tuple[Decimal | None, tuple[str, ...]]:
    """(cost, missing figures). Separate prices win over a blended one when both are given."""
    input_price, output_price = offering.input_per_mtok.value, offering.output_per_mtok.value
    if input_price is not None and output_price is not None:
        cached_price = offering.cached_input_per_mtok.value
        cached_price = input_price if cached_price is None else cached_price
        cost = (
            profile.uncached_input_tokens * input_price
            + profile.cached_input_tokens * cached_price
            + profile.output_tokens * output_price
        ) / MTOK
    elif offering.blended_per_mtok.value is not None:
        cost = (profile.input_tokens + profile.output_tokens) * offering.blended_per_mtok.value / MTOK
    else:
        missing = [
            name for name, price in (("input price", input_price), ("output price", output_price)) if price is None
        ]
        return None, tuple(missing)
    if offering.discount_pct:
        cost = cost * (1 - offering.discount_pct / HUNDRED)
    return cost, ()


def latency(profile: Profile, offering: OfferingFigures) -> tuple[Decimal | None, bool, tuple[str, ...]]:
    """(seconds per request, lower bound?, missing figures)."""
    speed = offering.output_tokens_per_s.value
    if not speed:
        return None, False, ("output tokens/s",)
    ttft = offering.ttft_seconds.value
    generation = profile.output_per_request / speed
    if ttft is None:
        return generation, True, ("time to first token",)
    return ttft + generation, False, ()


def verdict(profile: Profile, seconds: Decimal | None) -> tuple[bool | None, str, Decimal | None]:
    """(meets, kind, batch hours per night)."""
    if profile.batch_window_hours is not None:
        if seconds is None:
            return None, "batch", None
        per_night = Decimal(profile.requests) / DAYS_PER_MONTH
        hours = per_night * seconds / BATCH_CONCURRENCY / SECONDS_PER_HOUR
        return hours <= profile.batch_window_hours, "batch", hours
    if profile.sla_seconds is None:
        return None, "none", None
    if seconds is None:
        return None, "latency", None
    # A lower bound (unknown TTFT, counted as 0) that is over the SLA fails for certain; within it, the issue's
    # rule counts the unknown TTFT as 0, so it meets — and the latency is shown as "≥".
    return seconds <= profile.sla_seconds, "latency", None


def evaluate(profile: Profile, offering: OfferingFigures, *, today_cost: Decimal | None = None) -> Result:
    cost, missing_price = monthly_cost(profile, offering)
    seconds, lower_bound, missing_speed = latency(profile, offering)
    meets, kind, hours = verdict(profile, seconds)
    window = offering.context_window
    fits = None if not window else profile.tokens_per_request <= window
    versus = (cost - today_cost) / today_cost if cost is not None and today_cost else None
    saving = today_cost - cost if cost is not None and today_cost is not None else None
    return Result(
        offering, cost, seconds, lower_bound, meets, kind, hours, fits, versus, saving, missing_price + missing_speed
    )


def _order(result: Result):
    return (
        result.monthly_cost is None,
        result.monthly_cost or 0,
        result.latency_seconds is None,
        result.latency_seconds or 0,
        result.provider,
        result.model,
    )


def compare(profile: Profile, offerings: list[OfferingFigures], *, today_cost: Decimal | None = None) -> list[Result]:
    """Every offering evaluated, cheapest first; the cheapest whose SLA verdict is "meets" (or, with no SLA, the
    cheapest fitting its context) is marked `best`."""
    results = sorted((evaluate(profile, o, today_cost=today_cost) for o in offerings), key=_order)
    for index, result in enumerate(results):
        judged = result.meets_sla if result.sla_kind != "none" else True
        if result.monthly_cost is not None and judged and result.fits_context is not False:
            results[index] = _replace_best(result)
            break
    return results


def best_of(results: list[Result]) -> Result | None:
    return next((r for r in results if r.best), None)


def _replace_best(result: Result) -> Result:
    return replace(result, best=True)


# The three classic profiles of the issue, as monthly totals.
PRESETS = {
    "coding-copilot": Profile(
        requests=220_000,
        input_tokens=220_000 * 4_000,
        output_tokens=220_000 * 1_500,
        sla_seconds=Decimal(3),
        label="Real-time coding copilot (≤ 3 s)",
    ),
    "support-agent": Profile(
        requests=3_000_000,
        input_tokens=3_000_000 * 2_000,
        output_tokens=3_000_000 * 400,
        sla_seconds=Decimal(4),
        label="Customer-support agent (≤ 4 s)",
    ),
    "document-processing": Profile(
        requests=10_000_000,
        input_tokens=10_000_000 * 1_500,
        output_tokens=10_000_000 * 200,
        batch_window_hours=Decimal(8),
        label="Overnight document processing (8-hour batch window)",
    ),
}


# --- options as typed (command line, query string, page form) ---

INTEGER_OPTIONS = ("requests", "input_tokens", "output_tokens", "cached_input_tokens")
DECIMAL_OPTIONS = ("sla_seconds", "batch_window_hours")
TEXT_OPTIONS = ("workload", "family")
OPTIONS = (*TEXT_OPTIONS, *INTEGER_OPTIONS, *DECIMAL_OPTIONS)


def parse_options(raw: dict) -> dict:
    """Text values (None or "" = not given) → typed options; raises ProfileInvalid naming the first bad one.
    Volumes are whole numbers ≥ 0; the SLA and the window are positive decimals; a workload and a typed
    volume exclude each other."""
    options = {}
    for name in OPTIONS:
        value = raw.get(name)
        value = value.strip() if isinstance(value, str) else value
        if value in (None, ""):
            continue
        if name in INTEGER_OPTIONS:
            try:
                number = int(str(value).replace("_", "").replace(",", ""))
            except ValueError:
                raise ProfileInvalid(name, f"must be a whole number, not {value!r}") from None
            if number < 0:
                raise ProfileInvalid(name, "must not be negative")
            options[name] = number
        elif name in DECIMAL_OPTIONS:
            try:
                number = Decimal(str(value))
            except ArithmeticError:
                raise ProfileInvalid(name, f"must be a number, not {value!r}") from None
            if not number.is_finite() or number <= 0:
                raise ProfileInvalid(name, "must be greater than 0")
            options[name] = number
        else:
            options[name] = str(value)
    if "workload" in options:
        typed = [name for name in INTEGER_OPTIONS if name in options]
        if typed:
            raise ProfileInvalid(typed[0], "give a workload or volumes, not both")
    if "sla_seconds" in options and "batch_window_hours" in options:
        raise ProfileInvalid("batch_window_hours", "give a latency SLA or a batch window, not both")
    return options
