"""Why spend moved: a change between two periods split into volume, price and mix effects that add up to it.

No ORM here: the callers pass each period's rows of one subject (a workload, say) broken down by its parts (the
provider × model it ran on), each row with its priced `cost` and the `tokens` that cost paid for.

For one subject with parts i, C = Σ cᵢ and T = Σ tᵢ (tokens), its average rate r̄ = C / T and each part's rate
rᵢ = cᵢ / tᵢ. From last period (0) to this one (1):

- volume = (T₁ − T₀) · r̄₀ — what the change in tokens alone would have cost at last period's average rate;
- mix    = T₁ · (Σ s₁ᵢ r₀ᵢ − r̄₀) — what moving tokens between parts cost, at last period's rates (s₁ᵢ = t₁ᵢ / T₁);
- price  = T₁ · Σ s₁ᵢ (r₁ᵢ − r₀ᵢ) — what the parts' own rates changing cost, on this period's tokens.

They add up: volume + mix + price = T₁ Σ s₁ᵢ r₁ᵢ − T₀ r̄₀ = C₁ − C₀. Edge cases, decided so the sum still holds:
- a part new this period has no r₀ᵢ: its rate of this period stands in (it is mix, not price);
- a subject with no tokens last period: the whole change is volume (new usage); none this period: −C₀, volume;
- a charge with no tokens (taxes, fees, web search) has no rate: its change counts as price (what the subject
  pays changed with no change in tokens).
Each effect is computed at 80 significant digits and rounded half-even to 6 decimal places (micro-units of the
currency); the price effect takes the rounding's remainder, so the three shown add up to the shown change exactly.
"""

import decimal
from dataclasses import dataclass
from decimal import Decimal

from finops.core import display

ZERO = Decimal(0)
MICRO = Decimal("0.000001")


@dataclass(frozen=True)
class Effects:
    before: Decimal
    after: Decimal
    volume: Decimal
    price: Decimal
    mix: Decimal

    @property
    def change(self) -> Decimal:
        return self.after - self.before


def _totals(parts: dict) -> tuple[Decimal, int, Decimal]:
    """(cost of the parts with tokens, their tokens, cost of the parts without)."""
    priced = sum((c for c, t in parts.values() if t), ZERO)
    tokens = sum(t for _, t in parts.values() if t)
    tokenless = sum((c for c, t in parts.values() if not t), ZERO)
    return priced, tokens, tokenless


def split(before: dict, after: dict) -> Effects:
    """`before` / `after`: {part: (cost Decimal, tokens int)} of one subject in each period."""
    with decimal.localcontext(prec=80):
        c0, t0, fees0 = _totals(before)
        c1, t1, fees1 = _totals(after)
        total0, total1 = c0 + fees0, c1 + fees1
        if not t0 or not t1:
            volume, mix = c1 - c0, ZERO  # all new usage, or all gone: the token-bearing change is volume
        else:
            average0 = c0 / t0
            volume = (t1 - t0) * average0
            rates1 = {part: cost / tokens for part, (cost, tokens) in after.items() if tokens}
            rates0 = {part: cost / tokens for part, (cost, tokens) in before.items() if tokens}
            at_old_rates = sum((after[part][1] * rates0.get(part, rate) for part, rate in rates1.items()), ZERO)
            mix = at_old_rates - t1 * average0
        volume, mix = volume.quantize(MICRO), mix.quantize(MICRO)
        before_total, after_total = total0.quantize(MICRO), total1.quantize(MICRO)
        price = after_total - before_total - volume - mix
    return Effects(before=before_total, after=after_total, volume=volume, price=price, mix=mix)


def _signed_money(value: Decimal) -> str:
    return ("+" if value > 0 else "") + display.money_exact(value)


def explain(effects: Effects, before: dict, after: dict, names: dict) -> str:
    """One sentence on why: the biggest of the three effects, and the part (provider × model) whose cost moved most.
    `before`/`after` as split()'s; parts are (provider id, model) and `names` maps provider ids to names."""
    label, amount = max(
        (("Volume", effects.volume), ("Price", effects.price), ("Mix", effects.mix)), key=lambda e: abs(e[1])
    )
    tokens0 = sum(t for _, t in before.values())
    tokens1 = sum(t for _, t in after.values())
    if label == "Volume":
        change = display.percent_change((tokens1 - tokens0) / tokens0) if tokens0 else "new usage"
        reason = f"tokens {change} ({display.tokens_compact(tokens0)} → {display.tokens_compact(tokens1)})"
    elif label == "Price":
        reason = "its providers' rates (or charges without tokens) changed"
    else:
        reason = "usage moved between providers and models"
    moved = {
        part: after.get(part, (ZERO, 0))[0] - before.get(part, (ZERO, 0))[0] for part in before.keys() | after.keys()
    }
    text = f"{label} {_signed_money(amount)}: {reason}"
    if moved:
        (provider_id, model), delta = max(moved.items(), key=lambda item: (abs(item[1]), str(item[0])))
        text += f"; most on {names.get(provider_id, '?')} {display.model_name(model)} ({_signed_money(delta)})"
    return text
