"""Mergeable latency distributions: a month's p99 from hourly distributions is the p99 of every request, within
the stated 1 % relative error, where an average of hourly p99s is not."""

import math
import random
import struct

import pytest

from finops.performance import latency
from finops.performance.latency import ALPHA, LatencyDistribution, merged


def exact_quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def test_every_quantile_is_within_the_stated_relative_error():
    rng = random.Random(7)
    values = [rng.lognormvariate(5, 1.2) for _ in range(20_000)]  # ~150 ms median, a long tail
    distribution = LatencyDistribution.of(values)
    for q in (0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0):
        true = exact_quantile(values, q)
        assert abs(distribution.quantile(q) - true) <= ALPHA * true + 1e-9, q


def test_a_month_of_hourly_distributions_merges_into_the_months_p99_where_averaging_hourly_p99s_fails():
    """Quiet hours are fast, a few busy hours are slow: the month's p99 is set by the busy hours' requests."""
    rng = random.Random(11)
    hours, every = [], []
    for hour in range(720):
        busy = hour % 24 in (9, 10, 11)
        values = [rng.lognormvariate(7 if busy else 5, 0.4) for _ in range(400 if busy else 40)]
        hours.append(LatencyDistribution.of(values))
        every += values
    month = merged(hours)
    true_p99 = exact_quantile(every, 0.99)
    assert month.count == len(every)
    assert abs(month.quantile(0.99) - true_p99) <= ALPHA * true_p99
    averaged = sum(h.quantile(0.99) for h in hours) / len(hours)
    assert abs(averaged - true_p99) > 0.25 * true_p99  # the average of hourly p99s is far off


def test_merging_is_exact_and_in_any_order():
    a, b, c = (
        LatencyDistribution.of([10, 20, 20, 3000]),
        LatencyDistribution.of([0, 5]),
        LatencyDistribution.of([70] * 9),
    )
    assert a.merge(b).merge(c) == c.merge(a).merge(b)
    assert a.merge(b).merge(c).count == 15 and a.merge(b).zero == 1


def test_it_round_trips_through_json_and_refuses_another_kind():
    distribution = LatencyDistribution.of([0, 1.5, 44, 44, 812.3])
    assert LatencyDistribution.from_json(distribution.as_json()) == distribution
    with pytest.raises(ValueError, match="another kind"):
        LatencyDistribution.from_json({**distribution.as_json(), "alpha": "0.05"})
    assert LatencyDistribution.from_json(None).quantile(0.5) is None


def test_the_share_over_an_sla_counts_the_requests_slower_than_it():
    distribution = LatencyDistribution.of([100] * 90 + [5000] * 10)
    assert distribution.share_over(4000) == pytest.approx(0.10)
    assert distribution.share_over(10_000) == 0


def test_a_negative_latency_is_refused():
    with pytest.raises(ValueError, match="negative"):
        LatencyDistribution().add(-1)


def _sent(cells: list[int] | None) -> bytes | None:
    """A row's cells as the rollup fetches them: array_send(latency) less its header (length and value each)."""
    return None if cells is None else b"".join(struct.pack(">iq", 8, cell) for cell in cells)


def _unsent(found: bytes | None) -> list[int] | None:
    if found is None:
        return None
    ndim, has_null, element, length, lower = struct.unpack(">5i", found[:20])
    assert (ndim, has_null, element, lower) == (1, 0, 20, 1)
    pairs = [struct.unpack(">iq", found[20 + 12 * n : 32 + 12 * n]) for n in range(length)]
    assert all(size == 8 for size, _ in pairs)
    return [cell for _, cell in pairs]


@pytest.mark.parametrize("grid_slots", [1 << 22, 7])
def test_the_rollups_merge_of_sent_cells_equals_merging_the_distributions(monkeypatch, grid_slots):
    """finops.performance.latency.merge_sent_cells (the performance rollup's merge of a group's rows) gives each
    group the cells of its rows' distributions merged, sorted by bin, whatever the grouping of its work (a grid of
    7 slots takes the groups a block at a time)."""
    monkeypatch.setattr(latency, "_MERGE_GRID_SLOTS", grid_slots)
    rng = random.Random(7)
    groups, expected = [], []
    for _ in range(40):
        rows = []
        e2e_total, ttft_total = LatencyDistribution(), LatencyDistribution()
        for _ in range(rng.choice([0, 1, 3])):
            e2e = LatencyDistribution.of(rng.lognormvariate(6, 1.5) for _ in range(rng.randint(1, 30)))
            ttft = LatencyDistribution.of(rng.lognormvariate(4, 1) for _ in range(rng.randint(0, 5)))
            rows.append(latency.cells_of(e2e, ttft))
            e2e_total.absorb(e2e), ttft_total.absorb(ttft)
        groups.append(b"".join(_sent(cells) for cells in rows if cells) if rows else None)
        expected.append(latency.cells_of(e2e_total, ttft_total) if rows else None)
    found = [_unsent(sent) for sent in latency.merge_sent_cells(groups)]
    assert found == expected
    assert all(cells == sorted(cells) for cells in found if cells)


def test_a_merged_bucket_beyond_what_a_cell_holds_is_refused():
    full = latency.COUNT_MASK  # a bin of kind 0, index 0, counting every request a cell can hold
    cell = ((latency._INDEX_OFFSET) << latency.COUNT_BITS) | full
    with pytest.raises(ValueError, match="counts more requests"):
        latency.merge_sent_cells([_sent([cell]) + _sent([cell])])
