"""Split a billed amount across lines in proportion to weights, so the parts sum exactly to the bill.

Used where a cost report lacks a dimension the usage report has (Anthropic cost per API key, OpenAI
cost per model and key): each usage line gets billed cost in proportion to its tokens × list price.
"""

from decimal import ROUND_DOWN, Decimal, localcontext

QUANTUM = Decimal("1e-18")  # the UsageLine cost column's scale


def allocate(total: Decimal, weights: list[Decimal]) -> list[Decimal]:
    """Parts of `total` proportional to `weights`, each at most 18 decimals, summing exactly to `total`.

    Rounding leftovers go, one quantum each, to the parts with the largest remainders. With no positive
    weight the total is split evenly. An empty list of weights is an error: the money would vanish.
    """
    if not weights:
        raise ValueError("cannot allocate an amount over no lines")
    # 28 significant digits (Python's default) cannot hold 10^10 dollars at 18 decimals.
    with localcontext(prec=120):
        return _allocate(total, weights)


def _allocate(total: Decimal, weights: list[Decimal]) -> list[Decimal]:
    weights = [max(Decimal(w), Decimal(0)) for w in weights]
    weight_sum = sum(weights)
    if weight_sum == 0:
        weights, weight_sum = [Decimal(1)] * len(weights), Decimal(len(weights))
    sign = -1 if total < 0 else 1
    # Amounts are stored at 18 decimals; the parts add up to the total as stored.
    magnitude = abs(total).quantize(QUANTUM)
    exact = [magnitude * w / weight_sum for w in weights]
    parts = [e.quantize(QUANTUM, rounding=ROUND_DOWN) for e in exact]
    leftover = int((magnitude - sum(parts)) / QUANTUM)
    by_remainder = sorted(range(len(parts)), key=lambda i: exact[i] - parts[i], reverse=True)
    for i in by_remainder[:leftover]:
        parts[i] += QUANTUM
    return [sign * p for p in parts]
