"""The spend-spike method on constructed series (finops.alerts.selectors.spikes): a spike is far above a robust
baseline, large in money and at least double the usual day; a slow ramp, a tiny workload or a short history is not
one."""

from decimal import Decimal

from finops.alerts.selectors.spikes import spike_verdict

D = Decimal
FIFTY = D(50)


def _noisy(base: int, days: int = 28) -> list[Decimal]:
    """A workload spending about `base` a day, ±5 %."""
    return [D(base) + D(base) * D((n * 7) % 11 - 5) / 100 for n in range(days)]


def test_a_day_far_above_a_steady_workloads_median_is_a_spike():
    verdict = spike_verdict(_noisy(133), D("812.40"), minimum=FIFTY)
    assert verdict.is_spike
    assert verdict.baseline_median == D(133)
    assert verdict.threshold == verdict.baseline_median + 4 * verdict.spread
    assert f"{verdict.ratio:.1f}" == "6.1"


def test_an_ordinary_noisy_day_is_not_a_spike():
    assert not spike_verdict(_noisy(133), D(140), minimum=FIFTY).is_spike


def test_a_slow_ramp_each_day_a_little_above_the_last_is_not_a_spike():
    ramp = [D(100) * D("1.03") ** n for n in range(29)]
    for day in range(14, 29):  # every day of the ramp once it has a baseline, the last one included
        history = ([D(0)] * 28 + ramp[:day])[-28:]
        verdict = spike_verdict(history, ramp[day], minimum=FIFTY)
        assert verdict is not None and not verdict.is_spike, day


def test_a_tiny_workload_tripling_from_3_to_9_dollars_is_not_worth_an_alert():
    verdict = spike_verdict([D(3)] * 28, D(9), minimum=FIFTY)
    assert verdict.cost > verdict.threshold and verdict.cost >= 2 * verdict.baseline_median
    assert not verdict.is_spike  # only the minimum change ($50) stops it


def test_a_big_workload_rising_by_more_than_the_minimum_but_less_than_double_is_not_a_spike():
    verdict = spike_verdict([D(1000)] * 28, D(1900), minimum=FIFTY)
    assert verdict.cost > verdict.threshold and not verdict.is_spike


def test_a_perfectly_flat_series_has_a_spread_of_ten_percent_of_its_median_not_zero():
    verdict = spike_verdict([D(100)] * 28, D(101), minimum=D(0))
    assert verdict.spread == D(10) and verdict.threshold == D(140)
    assert not verdict.is_spike
    assert spike_verdict([D(100)] * 28, D(200), minimum=D(0)).is_spike


def test_fewer_than_14_days_with_spend_gives_no_verdict():
    assert spike_verdict([D(0)] * 15 + [D(100)] * 13, D(5000), minimum=FIFTY) is None
    assert spike_verdict([D(0)] * 14 + [D(100)] * 14, D(5000), minimum=FIFTY).is_spike


def test_days_without_spend_count_as_zero_in_the_baseline():
    # Weekdays only: 20 days at $100 and 8 at $0; the median is still $100, the MAD is $0, so the floor decides.
    history = [D(0) if n % 7 in (5, 6) else D(100) for n in range(28)]
    verdict = spike_verdict(history, D(250), minimum=FIFTY)
    assert verdict.baseline_median == D(100) and verdict.days_with_spend == 20
    assert verdict.is_spike


def test_one_earlier_spike_in_the_window_does_not_hide_the_next_one():
    history = _noisy(133)
    history[10] = D(5000)
    assert spike_verdict(history, D("812.40"), minimum=FIFTY).is_spike


def test_a_day_within_a_very_noisy_workloads_usual_swings_is_not_a_spike():
    history = [D(50) if n % 2 else D(250) for n in range(28)]  # median $150, MAD $100: spread $148.26
    verdict = spike_verdict(history, D(400), minimum=FIFTY)
    assert verdict.cost >= 2 * verdict.baseline_median and verdict.cost - verdict.baseline_median >= FIFTY
    assert verdict.threshold == D("743.04") and not verdict.is_spike
    assert spike_verdict(history, D("743.05"), minimum=FIFTY).is_spike
