"""Why spend moved (finops.spend.selectors.movers): a change split into volume, price and mix effects that add up to it
exactly."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from finops.spend.selectors.movers import explain, split

M = 1_000_000
X, Y, Z = (1, "kimi-k2.6"), (2, "kimi-k2.6"), (1, "")


def test_a_constructed_change_splits_into_its_volume_price_and_mix():
    """Last month: 1M tokens at $2/M on X and 1M at $4/M on Y ($6, an average $3/M). This month: 3M on X at $2/M
    and 1M on Y at $5/M ($11). Volume: 2M more tokens at $3/M = $6. Mix: this month's tokens at last month's
    rates ($10) against the same tokens at last month's average ($12) = −$2. Price: Y's rate up $1/M on 1M = $1."""
    effects = split({X: (Decimal(2), M), Y: (Decimal(4), M)}, {X: (Decimal(6), 3 * M), Y: (Decimal(5), M)})
    assert (effects.volume, effects.mix, effects.price) == (Decimal(6), Decimal(-2), Decimal(1))
    assert effects.change == Decimal(5) == effects.volume + effects.mix + effects.price


def test_a_move_to_a_cheaper_provider_at_the_same_volume_is_all_mix():
    effects = split({X: (Decimal(10), 10 * M)}, {X: (Decimal(2), 2 * M), Y: (Decimal("2.4"), 8 * M)})
    # Y is new: its own rate stands in for last month's, so no price effect; the tokens did not change.
    assert (effects.volume, effects.price, effects.mix) == (Decimal(0), Decimal(0), Decimal("-5.6"))


def test_new_usage_is_volume_usage_gone_is_volume_and_a_fee_is_price():
    assert split({}, {X: (Decimal(7), M)}).volume == Decimal(7)
    gone = split({X: (Decimal(7), M)}, {})
    assert (gone.volume, gone.price, gone.mix, gone.change) == (Decimal(-7), 0, 0, Decimal(-7))
    fee = split({X: (Decimal(5), M)}, {X: (Decimal(5), M), Z: (Decimal("1.25"), 0)})  # web search, no tokens
    assert (fee.volume, fee.mix, fee.price) == (0, 0, Decimal("1.25"))


def test_rounding_to_micro_units_still_adds_up_to_the_shown_change():
    effects = split({X: (Decimal(1), 3), Y: (Decimal(2), 7)}, {X: (Decimal(1), 7), Y: (Decimal(3), 11)})
    assert effects.volume + effects.price + effects.mix == effects.change
    assert effects.volume.as_tuple().exponent >= -6 and effects.mix.as_tuple().exponent >= -6


parts = st.dictionaries(
    st.sampled_from([X, Y, Z, (3, "gpt-5")]),
    st.tuples(st.decimals(min_value=0, max_value=10**6, places=6), st.integers(min_value=0, max_value=10**12)),
    max_size=4,
)


@given(parts, parts)
def test_the_three_effects_always_add_up_to_the_change(before, after):
    effects = split(before, after)
    assert effects.volume + effects.price + effects.mix == effects.change
    assert effects.change == effects.after - effects.before


def test_the_explanation_names_the_biggest_effect_and_the_part_that_moved_most():
    before, after = {X: (Decimal(2), M), Y: (Decimal(4), M)}, {X: (Decimal(6), 3 * M), Y: (Decimal(5), M)}
    text = explain(split(before, after), before, after, {1: "Groq", 2: "Moonshot"})
    assert text == "Volume +$6.00: tokens +100.0 % (2.0M → 4.0M); most on Groq Kimi K2.6 (+$4.00)"
