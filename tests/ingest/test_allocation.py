from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.connectors.allocation import allocate

amounts = st.decimals(
    min_value=Decimal("-1e9"), max_value=Decimal("1e9"), places=18, allow_nan=False, allow_infinity=False
)
weights = st.lists(
    st.decimals(min_value=0, max_value=Decimal("1e12"), places=6, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=30,
)


@given(amounts, weights)
def test_the_parts_always_sum_exactly_to_the_billed_amount(total, ws):
    parts = allocate(total, ws)
    assert sum(parts) == total and len(parts) == len(ws)


def test_parts_follow_the_weights():
    assert allocate(Decimal("10.00"), [Decimal(1), Decimal(3)]) == [Decimal("2.5"), Decimal("7.5")]


def test_with_no_priced_tokens_the_bill_is_split_evenly():
    assert allocate(Decimal("3"), [Decimal(0), Decimal(0), Decimal(0)]) == [Decimal(1)] * 3


def test_allocating_over_no_lines_refuses_rather_than_losing_money():
    with pytest.raises(ValueError):
        allocate(Decimal("1"), [])


def test_large_bills_split_exactly_beyond_the_default_decimal_precision():
    parts = allocate(Decimal("12345678901.5"), [Decimal(1), Decimal(2)])
    assert sum(parts) == Decimal("12345678901.5")
