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
- **Latency SLA**: meets when latency ≤ SLA (a lower bound that already exceeds the SLA fails for certain). Where
  the gateway logs measured the provider and model, the latency judged is the p99 time to first token + the
  workload's output per request at the measured speed (issue 28: the tail, not the median).
- **Batch window**: the month's requests are spread evenly over DAYS_PER_MONTH nights and run BATCH_CONCURRENCY at
  a time, each taking the latency above; a night's work takes requests per night × latency ÷ concurrency, and
  meets when that fits the window. The assumption is returned with every batch verdict (`BATCH_ASSUMPTION`).
- **Context fit**: input per request + output per request ≤ the context window (unknown window: unknown).
- **Against today**: (cost − today's cost) ÷ today's cost, when today's cost is known.
Ordering (issue 28, "same model first"): the workload's own model on every provider and tier, then the other
models of its family (smaller, newer), then other families; within each group, offerings passing every gate
first, then cheapest known cost first, unknown costs last; ties by latency, then provider, model and tier.

Gates (issue 28): the SLA (the measured p99 when the provider and model were measured, else the estimate), the
context window, the provider's rate limits where known (the month's average rate), the batch tier only for batch
workloads, and the quality floor: a model that is not the workload's own needs the workload's eval score for it,
at least the floor (its score on its own model); without one it is marked NO_EVIDENCE and never the headline.

Effective price (issue 28): the month's cost ÷ its tokens × 10⁶, from the workload's own mix, cache-hit rate
(applied where the offering prices cached input: CACHE_ASSUMPTION) and cache writes; the list price beside it is
the same tokens at the input and output prices, no cache.
"""

from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal

MTOK = Decimal(1_000_000)
HUNDRED = Decimal(100)
DAYS_PER_MONTH = 30
BATCH_CONCURRENCY = 100
SECONDS_PER_HOUR = 3600
IMPLAUSIBLE_SECONDS = Decimal(600)  # a single request answered in more than 10 minutes is not a real request
MAX_OUTPUT_PER_REQUEST = 131_072  # no model writes more than 128k tokens in one answer
NO_EVIDENCE = "no quality evidence: run an eval first"
CACHE_ASSUMPTION = (
    "the workload's cache-hit rate and cache writes carry over to offerings that price cached input; "
    "elsewhere every input token is billed at the input price"
)
BATCH_TIER_GATE = "batch tier: results within 24 h, for batch workloads only"
GROUPS = ("same model", "same family", "other family")
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
    cache_write_tokens: int = 0  # of the input tokens, those written to the prompt cache
    sla_seconds: Decimal | None = None
    batch_window_hours: Decimal | None = None
    label: str = ""
    batch: bool = False  # a batch workload (its latency profile), with or without a window: the batch tier fits it

    def __post_init__(self):
        for name in ("requests", "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens"):
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
        return self.input_tokens - self.cached_input_tokens - self.cache_write_tokens

    @property
    def cache_hit_rate(self) -> Decimal | None:
        return Decimal(self.cached_input_tokens) / self.input_tokens if self.input_tokens else None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

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
    tier: str = "standard"
    cache_write_per_mtok: Figure = Figure(None)
    ttft_p99_seconds: Figure = Figure(None)  # measured p99 time to first token of the provider and model
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    family_name: str = ""
    model_name: str = ""
    lineage: str = ""  # the family's line (claude, gpt, llama …): "same family, smaller or newer"

    @property
    def label(self) -> str:
        """ "AWS Bedrock · Claude Sonnet 4.5 (batch)": display names, the tier when not standard."""
        tier = "" if self.tier == "standard" else f" ({self.tier})"
        return f"{self.provider_name or self.provider} · {self.model_name or self.model}{tier}"


@dataclass(frozen=True)
class Judge:
    """What the comparison knows of the workload beyond its volumes: its own family and line, the offerings it
    uses today ((provider, model) pairs), its eval scores per (provider, model) and per family, and the floor."""

    family: str | None = None
    lineage: str | None = None
    today: frozenset = frozenset()
    scores: dict = field(default_factory=dict)  # (provider, model) -> score
    family_scores: dict = field(default_factory=dict)  # family -> best score of any provider
    floor: Decimal | None = None
    eval_name: str = ""


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
    group: int = 0  # index in GROUPS
    gates: tuple[str, ...] = field(default=())  # why it cannot be recommended (empty: passes)
    evidence: Decimal | None = None  # the workload's eval score for this model
    evidence_mark: str = ""  # NO_EVIDENCE when another model has no score
    is_today: bool = False
    list_per_mtok: Decimal | None = None
    effective_per_mtok: Decimal | None = None
    sanity: tuple[str, ...] = field(default=())
    sla_basis: str = ""  # "measured p99" | "estimate"

    @property
    def group_name(self) -> str:
        return GROUPS[self.group]

    @property
    def tier(self) -> str:
        return self.offering.tier

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
            "tier": self.tier,
            "name": self.offering.label,
            "group": self.group_name,
            "today": self.is_today,
            "monthly_cost": _text(self.monthly_cost, Decimal("0.01")),
            "list_per_mtok": _text(self.list_per_mtok, Decimal("0.0001")),
            "effective_per_mtok": _text(self.effective_per_mtok, Decimal("0.0001")),
            "latency_seconds": _text(self.latency_seconds, Decimal("0.01")),
            "sla_basis": self.sla_basis,
            "meets_sla": self.meets_sla,
            "gates": list(self.gates),
            "quality": _text(self.evidence, Decimal("0.0001")),
            "quality_evidence": self.evidence_mark or ("eval" if self.evidence is not None else "same model"),
            "sanity": list(self.sanity),
            "recommended": self.best,
        }


def _text(value: Decimal | None, quantum: Decimal) -> str | None:
    return None if value is None else str(value.quantize(quantum, rounding=ROUND_HALF_UP))


def monthly_cost(profile: Profile, offering: OfferingFigures) -> tuple[Decimal | None, tuple[str, ...]]:
    """(cost, missing figures). Separate prices win over a blended one when both are given."""
    input_price, output_price = offering.input_per_mtok.value, offering.output_per_mtok.value
    if input_price is not None and output_price is not None:
        cached_price = offering.cached_input_per_mtok.value
        cached_price = input_price if cached_price is None else cached_price
        # Cache writes cost the write price where the offering has a prompt cache; without one they are plain input.
        write_price = offering.cache_write_per_mtok.value
        if write_price is None or offering.cached_input_per_mtok.value is None:
            write_price = input_price
        cost = (
            profile.uncached_input_tokens * input_price
            + profile.cached_input_tokens * cached_price
            + profile.cache_write_tokens * write_price
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


def list_per_mtok(profile: Profile, offering: OfferingFigures) -> Decimal | None:
    """The list price of the month's tokens: input at the input price, output at the output price, no cache, no
    discount, ÷ tokens × 10⁶ (a blended price as it is)."""
    input_price, output_price = offering.input_per_mtok.value, offering.output_per_mtok.value
    if not profile.total_tokens:
        return None
    if input_price is not None and output_price is not None:
        return (profile.input_tokens * input_price + profile.output_tokens * output_price) / profile.total_tokens
    return offering.blended_per_mtok.value


def sanity(
    profile: Profile, offering: OfferingFigures, seconds: Decimal | None, *, own_model: bool = True
) -> tuple[str, ...]:
    """Per-request figures no real request has, with their likely cause (issue 28). More tokens per request than
    the context window is implausible only for the model the traffic ran on (`own_model`); on another model it is
    that model's gate ("context window too small"), not a fault of the figures."""
    flags = []
    if seconds is not None and seconds > IMPLAUSIBLE_SECONDS:
        flags.append(
            f"implausible: {seconds.quantize(Decimal(1))} s per request "
            f"({profile.output_per_request.quantize(Decimal(1))} output tokens per request): the usage counts fewer "
            "requests than were made (aggregated records?)"
        )
    elif profile.output_per_request > MAX_OUTPUT_PER_REQUEST:
        flags.append(
            f"implausible: {profile.output_per_request.quantize(Decimal(1)):,} output tokens per request, more than "
            "any model writes in one answer: the usage counts fewer requests than were made (aggregated records?)"
        )
    if own_model and offering.context_window and profile.tokens_per_request > offering.context_window:
        flags.append(
            f"implausible: {profile.tokens_per_request.quantize(Decimal(1)):,} tokens per request, beyond the "
            f"{offering.context_window:,}-token context window"
        )
    return tuple(flags)


def _gates(profile: Profile, offering: OfferingFigures, meets: bool | None, fits: bool | None) -> list[str]:
    gates = []
    batch_workload = profile.batch_window_hours is not None
    if offering.tier == "batch" and not (batch_workload or profile.batch):
        gates.append(BATCH_TIER_GATE)
    elif meets is False:
        gates.append("fails the batch window" if batch_workload else "fails the SLA")
    if fits is False:
        gates.append("context window too small")
    minutes = Decimal(DAYS_PER_MONTH * 24 * 60)
    if offering.requests_per_minute and profile.requests / minutes > offering.requests_per_minute:
        gates.append(f"over the rate limit ({offering.requests_per_minute:,} requests/min at the month's average)")
    if offering.tokens_per_minute and profile.total_tokens / minutes > offering.tokens_per_minute:
        gates.append(f"over the rate limit ({offering.tokens_per_minute:,} tokens/min at the month's average)")
    return gates


def evaluate(
    profile: Profile, offering: OfferingFigures, *, today_cost: Decimal | None = None, judge: Judge | None = None
) -> Result:
    judge = judge or Judge()
    cost, missing_price = monthly_cost(profile, offering)
    seconds, lower_bound, missing_speed = latency(profile, offering)
    basis = "estimate" if seconds is not None else ""
    flags = sanity(profile, offering, seconds, own_model=judge.family is None or offering.family == judge.family)
    speed = offering.output_tokens_per_s.value
    if offering.ttft_p99_seconds.value is not None and speed and profile.batch_window_hours is None:
        # The SLA is judged on the measured distribution's tail (its p99 time to first token), not on its median;
        # the generation is the workload's own output per request at the measured speed.
        seconds = offering.ttft_p99_seconds.value + profile.output_per_request / speed
        lower_bound, missing_speed, basis = False, (), "measured p99"
    meets, kind, hours = verdict(profile, seconds)
    window = offering.context_window
    fits = None if not window else profile.tokens_per_request <= window
    versus = (cost - today_cost) / today_cost if cost is not None and today_cost else None
    saving = today_cost - cost if cost is not None and today_cost is not None else None
    gates = _gates(profile, offering, meets, fits)
    if judge.family is None or offering.family == judge.family:
        group = 0
    elif judge.lineage and offering.lineage == judge.lineage:
        group = 1
    else:
        group = 2
    evidence = judge.scores.get((offering.provider, offering.model), judge.family_scores.get(offering.family))
    mark = ""
    if group and judge.family is not None:
        if evidence is None:
            mark = NO_EVIDENCE
        elif judge.floor is not None and evidence < judge.floor:
            gates.append(f"below the quality floor ({evidence.normalize():f} < {judge.floor.normalize():f})")
    effective = cost / profile.total_tokens * MTOK if cost is not None and profile.total_tokens else None
    return Result(
        offering,
        cost,
        seconds,
        lower_bound,
        meets,
        kind,
        hours,
        fits,
        versus,
        saving,
        missing_price + missing_speed,
        group=group,
        gates=tuple(gates),
        evidence=evidence,
        evidence_mark=mark,
        is_today=(offering.provider, offering.model) in judge.today and offering.tier == "standard",
        list_per_mtok=list_per_mtok(profile, offering),
        effective_per_mtok=effective,
        sanity=flags,
        sla_basis=basis,
    )


def _order(result: Result):
    return (
        result.group,
        not result.is_today,
        bool(result.gates),
        result.monthly_cost is None,
        result.monthly_cost or 0,
        result.latency_seconds is None,
        result.latency_seconds or 0,
        result.offering.provider_name or result.provider,
        result.model,
        result.tier,
    )


def recommendable(result: Result) -> bool:
    """May be the headline: priced, passing every gate, its SLA verdict "meets" (or no SLA), with quality evidence
    when it is another model, and no implausible figure (a verdict on an impossible request proves nothing)."""
    judged = result.meets_sla if result.sla_kind != "none" else True
    return (
        result.monthly_cost is not None
        and bool(judged)
        and result.fits_context is not False
        and not result.gates
        and not result.evidence_mark
        and not result.sanity
    )


def compare(
    profile: Profile,
    offerings: list[OfferingFigures],
    *,
    today_cost: Decimal | None = None,
    judge: Judge | None = None,
) -> list[Result]:
    """Every offering evaluated, in the comparison's order (module docstring); the cheapest `recommendable` one is
    marked `best` — never one failing a gate, never another model without quality evidence."""
    results = sorted((evaluate(profile, o, today_cost=today_cost, judge=judge) for o in offerings), key=_order)
    eligible = [i for i, r in enumerate(results) if recommendable(r)]
    if eligible:
        index = min(eligible, key=lambda i: (results[i].monthly_cost, results[i].group, i))
        results[index] = _replace_best(results[index])
    return results


def best_of(results: list[Result]) -> Result | None:
    return next((r for r in results if r.best), None)


def _replace_best(result: Result) -> Result:
    return replace(result, best=True)
