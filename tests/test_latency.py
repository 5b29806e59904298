"""Mergeable latency distributions: a month's p99 from hourly distributions is the p99 of every request, within
the stated 1 % relative error, where an average of hourly p99s is not."""

import math
import random

import pytest

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
