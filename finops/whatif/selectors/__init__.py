"""Reads for the what-if calculator and the Savings page (issue 13): a workload's last 30 days as a calculator
profile, per workload the cheapest offering meeting its SLA, and a what-if; each offering's figures with their
source are read in finops.whatif.selectors.offerings.

Where each figure comes from (docs/whatif.md):
- **Prices**: the catalog (ModelPrice, the price in force today for the offering's provider and model) is the one
  source of truth; an offering's entered prices are used only where the catalog has none. A contract discount
  (the largest of the provider's contracts covering today) applies to either.
- **Performance**: measured from the company's gateway logs over the last 30 days (output tokens/s over streamed
  requests, else end to end; the median time to first token) wins over the offering's entered figures, figure by
  figure; the source says which period or "entered".
- **Spend**: a workload's last 30 days through finops.spend.selectors.spend.signed_sums (the one reading of spend); the
  month a what-if prices is those 30 days.
"""

import datetime as dt
from dataclasses import dataclass, field, replace
from decimal import Decimal

from django.db.models import Sum

from finops.core import access
from finops.core.text import storable
from finops.models import DailySpend, MonthlySpend, Provider, RoutingPolicy, Workload
from finops.performance.selectors import performance as performance_selector
from finops.performance.selectors.evals import quality_by, scores_by
from finops.spend.selectors import spend
from finops.whatif.calculator import Judge, Profile, ProfileInvalid, Result, best_of, compare
from finops.whatif.families import lineage
from finops.whatif.selectors.offerings import (
    WINDOW_DAYS,
    Catalogue,
    cached_catalogue,
    catalogue,
    family_map,
    offered_families,
    window,
)

CENT = Decimal("0.01")
SPEND_MEASURES = {
    "input": Sum("input_tokens"),
    "cached": Sum("cached_input_tokens"),
    "cache_write": Sum("cache_write_tokens"),
    "output": Sum("output_tokens"),
    "requests": Sum("requests"),
    "cost": Sum("reporting_cost"),
    "lines": Sum("line_count"),
    "priced_lines": Sum("line_count", filter=~spend.UNPRICED),
}


def _workloads(user):
    """`user` None: the command line, run by whoever operates the install (sees everything)."""
    return Workload.objects.select_related("team") if user is None else access.visible_workloads(user)


def _spend(user):
    return DailySpend.objects.all() if user is None else spend.visible_spend(user)


# --- a workload's last 30 days ---


@dataclass(frozen=True)
class Usage:
    """A workload's (or one family's part of it) last 30 days."""

    requests: int
    input: int  # every input token, cached and cache writes included
    cached: int
    output: int
    cost: Decimal | None  # None: nothing of it priced (unknown, never $0)
    cache_write: int = 0
    pairs: frozenset = frozenset()  # (provider id, model) it ran on

    def profile(self, workload: Workload, label: str = "") -> Profile:
        if not self.requests:
            raise ProfileInvalid("workload", f"{workload.slug} recorded no requests in the last {WINDOW_DAYS} days")
        batch = performance_selector.is_batch(workload)
        return Profile(
            requests=self.requests,
            input_tokens=self.input,
            cached_input_tokens=self.cached,
            cache_write_tokens=self.cache_write,
            output_tokens=self.output,
            sla_seconds=None if batch else workload.sla_seconds,
            batch_window_hours=Decimal(workload.batch_window_hours) if batch else None,
            label=label or workload.name,
            batch=workload.latency_profile == Workload.LatencyProfile.BATCH,
        )


def _usage(rows: list[dict]) -> Usage:
    cost = None
    for row in rows:
        if row["priced_lines"] and row["cost"] is not None:
            cost = (cost or Decimal(0)) + row["cost"]
    total = lambda name: sum((row[name] or 0) for row in rows)  # noqa: E731
    return Usage(
        requests=total("requests"),
        input=total("input") + total("cached") + total("cache_write"),
        cached=total("cached"),
        output=total("output"),
        cost=cost,
        cache_write=total("cache_write"),
        pairs=frozenset((row["provider_id"], row["model"]) for row in rows if "provider_id" in row),
    )


def usage_rows(
    user, today: dt.date, workload_ids: list[int] | None = None, *, start: dt.date | None = None
) -> list[dict]:
    """The spend rollup of the last 30 days (or of [start, today)) per workload × model, as the user may see it."""
    start, end = (start, today) if start is not None else window(today)
    daily = _spend(user).filter(workload__isnull=False)
    if workload_ids is not None:
        daily = daily.filter(workload_id__in=workload_ids)
    return spend.signed_sums(
        daily, None, start, end, ("workload_id", "provider_id", "model"), measures=SPEND_MEASURES, today=today
    )


def workload_usage(user, workload: Workload, today: dt.date) -> tuple[Usage, dict[str, Usage]]:
    """The workload's whole last 30 days, and its part on each model family (most costly first)."""
    rows = usage_rows(user, today, [workload.id])
    families = family_map()
    parts: dict[str, list[dict]] = {}
    for row in rows:
        parts.setdefault(families.family_of(row["model"]), []).append(row)
    by_family = {name: _usage(part) for name, part in parts.items()}
    ordered = sorted(by_family, key=lambda name: -(by_family[name].cost or 0))
    return _usage(rows), {name: by_family[name] for name in ordered}


def workload_judge(workload: Workload, own: str | None, usage: Usage, today: dt.date) -> Judge:
    """What the comparison knows of a workload beyond its volumes (finops.whatif.calculator.Judge): its own family and
    line,
    the (provider, model) pairs it ran on, and its eval scores over the window (POST /api/v1/evals). The quality
    floor is its primary eval's score today (finops.performance.selectors.evals.quality_by over its own pairs): another
    model is recommended only when it scores at least that."""
    start, end = window(today)
    slugs = dict(Provider.objects.values_list("id", "slug"))
    today_pairs = frozenset((slugs[p], model) for p, model in usage.pairs if p in slugs)
    scores = scores_by([workload.id], start, end)
    primary = quality_by([workload.id], start, end).get(workload.id)
    by_pair, by_family, own_scores = {}, {}, []
    if primary is not None:
        families = family_map()
        for (_, provider_id, model), named in scores.items():
            quality = named.get(primary.name)
            if quality is None:
                continue
            pair = (slugs.get(provider_id), model)
            by_pair[pair] = quality.score
            name = families.family_of(model)
            by_family[name] = max(by_family.get(name, quality.score), quality.score)
            if pair in today_pairs:
                own_scores.append(quality.score)
    floor = sum(own_scores, Decimal(0)) / len(own_scores) if own_scores else None
    return Judge(
        family=own,
        lineage=lineage(own) if own else None,
        today=today_pairs,
        scores=by_pair,
        family_scores=by_family,
        floor=floor,
        eval_name=primary.name if primary is not None else "",
    )


# --- routing savings ---


@dataclass(frozen=True)
class Saving:
    workload: Workload
    family: str
    usage: Usage
    results: list[Result]
    best: Result | None
    policy: RoutingPolicy | None
    note: str = ""

    @property
    def today_cost(self) -> Decimal | None:
        return self.usage.cost

    @property
    def saving(self) -> Decimal:
        """What routing this part to its best offering saves a month; 0 when the best costs more than today."""
        if self.best is None or self.today_cost is None:
            return Decimal(0)
        # Rounded to the cent once, here: every total is the sum of the rows as shown.
        return max(Decimal(0), self.today_cost - self.best.monthly_cost).quantize(CENT)


@dataclass(frozen=True)
class SavingsReport:
    rows: list[Saving]  # biggest saving first
    today_total: Decimal  # Σ today's cost of every workload part with a known cost
    saving_total: Decimal  # Σ of the rows' savings, each rounded to the cent
    basis: str = ""  # the spend the savings are priced on, in words: "the last 30 days (27 Oct – 25 Nov 2026)"
    today_by_workload: dict = field(default_factory=dict)  # workload id -> Σ today's cost of its parts (today_total's)

    @property
    def saving_share(self) -> Decimal | None:
        """Σ saving ÷ Σ today's cost (sum over sum): "routing would cost X % less than today"."""
        return self.saving_total / self.today_total if self.today_total else None


def savings(user, today: dt.date, cat: Catalogue | None = None, *, start: dt.date | None = None) -> SavingsReport:
    """Per visible workload and family of its usage: the cheapest allowed offering that meets its SLA.

    The basis (docs/whatif.md), one everywhere: each part's spend over a month — the last 30 complete days on the
    Savings page, the report's calendar month (`start`: its first day, `today`: its end) in the monthly report —
    against what the same volume would cost on the best offering. A "month" of saving is that period's.

    Allowed: the workload's routing policy's `allowed` set when it has one, else every offering of the family.
    A part whose cost today is unknown (unpriced) is listed and saves nothing.
    """
    workloads = {w.id: w for w in _workloads(user)}
    policies = {
        p.workload_id: p
        for p in RoutingPolicy.objects.filter(workload_id__in=workloads)
        .select_related("primary__provider", "fallback__provider")
        .prefetch_related("allowed__provider")
    }
    families = family_map()
    groups: dict[tuple[int, str], list[dict]] = {}
    for row in usage_rows(user, today, list(workloads), start=start):
        groups.setdefault((row["workload_id"], families.family_of(row["model"])), []).append(row)
    # Only the families in use (and those of the policies' allowed offerings) are read.
    wanted = {family for _, family in groups} | {o.family for p in policies.values() for o in p.allowed.all()}
    cat = cat or catalogue(today, wanted)
    rows, today_total, by_workload = [], Decimal(0), {}
    for (workload_id, family), parts in groups.items():
        workload, policy = workloads[workload_id], policies.get(workload_id)
        usage = _usage(parts)
        today_total += usage.cost or 0  # every part counts in "today": one no offering serves stays as it is
        by_workload[workload_id] = by_workload.get(workload_id, Decimal(0)) + (usage.cost or 0)
        if policy is not None and policy.allowed.all():
            allowed = {(o.provider.slug, o.model) for o in policy.allowed.all()}
            candidates = [o for o in cat.offerings if (o.provider, o.model) in allowed]
        else:
            candidates = cat.of_family(family)
        if not candidates:
            continue  # no offering of this family: nothing to compare (the page says how many parts)
        try:
            profile = usage.profile(workload)
        except ProfileInvalid as exc:
            rows.append(Saving(workload, family, usage, [], None, policy, exc.message))
            continue
        results = compare(profile, candidates, today_cost=usage.cost)
        rows.append(Saving(workload, family, usage, results, best_of(results), policy))
    rows.sort(key=lambda s: (-s.saving, s.workload.slug, s.family))
    saving_total = sum((s.saving for s in rows), Decimal(0))
    return SavingsReport(rows, today_total, saving_total, basis_words(today, start), by_workload)


def basis_words(today: dt.date, start: dt.date | None = None) -> str:
    """ "the last 30 days (27 Oct – 25 Nov 2026)"; "October 2026" for a calendar month; "November 2026 to date"."""
    if start is not None and start.day == 1:
        label = f"{start:%B %Y}"
        whole = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        return label if today >= whole else f"{label} to date"
    first, end = (start, today) if start is not None else window(today)
    last = end - dt.timedelta(days=1)
    return f"the last {(end - first).days} days ({first:%-d %b} – {last:%-d %b %Y})"


# --- one what-if, from the options the command, the API and the page share ---


@dataclass(frozen=True)
class WhatIf:
    profile: Profile
    results: list[Result]
    workload: Workload | None = None
    family: str | None = None
    families: tuple[str, ...] = ()
    today_cost: Decimal | None = None
    judge: Judge | None = None

    @property
    def best(self) -> Result | None:
        return best_of(self.results)

    @property
    def across_families(self) -> bool:
        """A workload none of whose families has an offering: every offering is compared (other weights)."""
        return self.workload is not None and self.family is None


VOLUME_FIELDS = ("requests", "input_tokens", "output_tokens")


def what_if(
    user,
    *,
    today: dt.date,
    workload: str | None = None,
    requests: int | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_input_tokens: int | None = None,
    sla_seconds: Decimal | None = None,
    batch_window_hours: Decimal | None = None,
    family: str | None = None,
    cat: Catalogue | None = None,
) -> WhatIf:
    """A workload's last 30 days (its SLA unless one is given) or a typed profile, against the offerings of
    `family` (a workload: by default its most costly family with offerings; a profile: every offering). Raises
    ProfileInvalid
    naming the option at fault; another team's workload is unknown, like one that does not exist."""
    known = cat.families() if cat is not None else offered_families()
    if family is not None and family not in known:
        raise ProfileInvalid(
            "family", f"unknown family {family!r} (families with offerings: {', '.join(known) or 'none'})"
        )
    if workload is not None:
        found = _workloads(user).filter(slug=workload).first() if storable(workload) else None
        if found is None:
            raise ProfileInvalid("workload", f"unknown workload {workload!r}")
        whole, parts = workload_usage(user, found, today)
        # The month priced is the workload's part on one family: the one asked for when it uses it, else its most
        # costly (what routing it would move, as on the Savings page). Same model first (issue 28): every offering
        # is compared, the workload's own model on every provider and tier first; `family` narrows the candidates.
        own = family if family in parts else next(iter(parts), None)
        cat = cat or cached_catalogue(today, None if family is None else {family} | ({own} if own else set()))
        usage = parts.get(own, whole)
        label = found.name + (f" ({own} part)" if own in parts and len(parts) > 1 else "")
        profile = usage.profile(found, label)
        if sla_seconds is not None or batch_window_hours is not None:
            profile = replace(profile, sla_seconds=sla_seconds, batch_window_hours=batch_window_hours)
        offerings = cat.of_family(family) if family is not None else cat.offerings
        judge = workload_judge(found, own, usage, today)
        results = compare(profile, offerings, today_cost=usage.cost, judge=judge)
        return WhatIf(profile, results, found, own, tuple(parts), usage.cost, judge)
    volumes = {"requests": requests, "input_tokens": input_tokens, "output_tokens": output_tokens}
    for name in VOLUME_FIELDS:
        if volumes[name] is None:
            raise ProfileInvalid(name, "required (or give a workload)")
    profile = Profile(
        **volumes,
        cached_input_tokens=cached_input_tokens or 0,
        sla_seconds=sla_seconds,
        batch_window_hours=batch_window_hours,
    )
    cat = cat or cached_catalogue(today, None if family is None else {family})
    return WhatIf(profile, compare(profile, cat.of_family(family)), None, family)


# --- the same weights across providers, from the company's own spend (provider page) ---


def family_comparison(user, families: set[str] | None, start: dt.date, end: dt.date, *, today: dt.date) -> list[dict]:
    """Per family (those given; None: every one) and provider: the company's own spend, priced tokens and $/M
    tokens (Σcost ÷ Σpriced tokens × 10⁶, sum over sum) over [start, end), read through spend.sums (the one
    reading of spend), from the rows the user may see. Families used on one provider only are left out: there is
    nothing to compare."""
    rows = spend.sums(
        _spend(user),
        spend.visible_spend(user, MonthlySpend) if user is not None else MonthlySpend.objects.all(),
        start,
        end,
        ("provider_id", "model"),
        today=today,
    )
    mapping = family_map()
    grouped: dict[tuple[str, int], dict] = {}
    for row in rows:
        if not row["model"]:
            continue
        family = mapping.family_of(row["model"])
        if families is not None and family not in families:
            continue
        total = grouped.setdefault(
            (family, row["provider_id"]),
            {
                "family": family,
                "provider_id": row["provider_id"],
                "models": set(),
                "cost": None,
                "priced_tokens": 0,
                "unpriced_tokens": 0,
            },
        )
        total["models"].add(row["model"])
        if row["cost"] is not None:
            total["cost"] = (total["cost"] or Decimal(0)) + row["cost"]
        total["priced_tokens"] += row["priced_tokens"]
        total["unpriced_tokens"] += row["unpriced_tokens"]
    providers = Provider.objects.in_bulk({p for _, p in grouped})
    per_family: dict[str, int] = {}
    for family, _ in grouped:
        per_family[family] = per_family.get(family, 0) + 1
    found = []
    for (family, provider_id), total in sorted(
        grouped.items(), key=lambda item: (item[0][0], providers[item[0][1]].name)
    ):
        if per_family[family] < 2:
            continue
        found.append(
            {
                **total,
                "provider": providers[provider_id].name,
                "models": ", ".join(sorted(total["models"])),
                "usd_per_mtok": spend.per_mtok(total["cost"], total["priced_tokens"]),
            }
        )
    return found
