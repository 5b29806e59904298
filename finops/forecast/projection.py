"""The one spend forecast (issue 24): what a period (a month, a quarter, a year, a commitment period) will have cost
by its end, with a range, from a scope's daily spend so far. The overview, the caps (their pages, emails and
alerts), the contracts and the monthly report all call `forecast`; none computes its own (tests/test_forecast.py
scans for the old formulas). Its back-test, and why it beats the 7-day run rate, is docs/forecast.md
(`manage.py backtest_forecast`).

Method, for a period [start, end) seen on `as_of` (the first day not yet complete — today on a page):
1. **History**: the scope's spend of the HISTORY_DAYS complete days before `as_of`, from its first day with spend
   (a younger scope has a shorter history; a day without spend after that counts as $0).
2. **Day-of-week profile**, with at least PROFILE_MIN_DAYS days of history: each day's spend over its centred
   7-day mean (ratio to moving average, so a ramp does not bias it), the median ratio per weekday, normalised to
   average 1. Spend has a weekly rhythm (the demo's weekends are about half its weekdays): a run rate over the
   last 7 days misjudges a month that starts or ends on a weekend, this does not. Fewer days: a flat profile.
3. **Trend**: a straight line fitted (least squares) to the deseasonalised spend of the last TREND_DAYS days of
   the history (all of it when shorter, flat below PROFILE_MIN_DAYS). Each day ahead adds the slope damped by
   DAMPING per day, so a month-long ramp is followed but not extrapolated without end; never below $0 a day.
4. **Forecast** = the period's actual spend before `as_of` + Σ (level of the day × its weekday factor) over the
   days from `as_of` (today included: its partial spend is not a complete day) to the period's end; never below
   `at_least` (what the period has already spent, today's partial day included).
5. **Range** (low – high): an 80 % prediction interval of the days ahead (± 1.28 standard deviations), from the
   residual day-to-day noise about the line and the uncertainty of the line itself (its level and slope), each day
   scaled by its weekday factor. The back-test reports how often the month's actual total fell inside it.
6. **No forecast** (None, "not enough history") when fewer than MIN_HISTORY_DAYS days of the history had spend.
   A period already over (as_of ≥ end) is its actual spend, with no range.

Money: sums are Decimal; the days ahead are estimated in floating point and rounded to the cent once.
"""

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pandas as pd

HISTORY_DAYS = 56  # eight weeks
PROFILE_MIN_DAYS = 14  # two weeks: the least from which a weekday profile and a trend are read
TREND_DAYS = 28
DAMPING = 0.97  # per day ahead: a trend's effect halves in about 23 days
MIN_HISTORY_DAYS = 5
OUTLIER_MADS = 3.5
OUTLIER_PASSES = 5
TREND_SHRINK = 4.0  # a slope two standard errors from flat keeps half its size
Z_80 = 1.2816  # two-sided 80 % interval of a normal distribution
ZERO = Decimal(0)
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Forecast:
    """A period's forecast total. `actual`: its complete days' spend before `as_of`; `total`, `low`, `high`: None
    when there is not enough history."""

    start: dt.date
    end: dt.date
    as_of: dt.date
    actual: Decimal
    total: Decimal | None
    low: Decimal | None
    high: Decimal | None
    days_left: int
    method: str

    @property
    def daily_rate(self) -> Decimal | None:
        """The average forecast spend of each day left."""
        if self.total is None or not self.days_left:
            return None
        return ((self.total - self.actual) / self.days_left).quantize(CENT)

    @property
    def has_range(self) -> bool:
        return self.low is not None and self.high is not None and self.low != self.high


def history_start(as_of: dt.date) -> dt.date:
    """The first day a forecast on `as_of` reads: callers read their daily spend from here."""
    return as_of - dt.timedelta(days=HISTORY_DAYS)


# The days ahead's spend, summed, its standard deviation and the method in words, for a range of days ahead.
Model = Callable[[pd.DatetimeIndex], tuple[float, float, str]]


@dataclass(frozen=True)
class Fitted:
    """Steps 1-3 of the method (history, weekday profile, trend) on `as_of`: they read the daily spend before
    `as_of` only, not the period, so the periods of one scope on one day share them (a monthly contract's twelve
    commitment periods were fitted twelve times). `model` None: not enough history."""

    as_of: dt.date
    model: Model | None


def fit(daily: Mapping[dt.date, Decimal | None], *, as_of: dt.date) -> Fitted:
    """What `forecast` fits from `daily` on `as_of`, for several periods' forecasts (its `fitted`)."""
    history = _history(daily, as_of)
    return Fitted(as_of, None if history is None else _model(history))


def forecast(
    daily: Mapping[dt.date, Decimal | None],
    *,
    start: dt.date,
    end: dt.date,
    as_of: dt.date,
    at_least: Decimal | None = None,
    fitted: Fitted | None = None,
) -> Forecast:
    """The forecast total of [start, end) seen on `as_of` from `daily` ({day: spend}; days from `as_of` on are
    ignored, missing days are $0). `at_least`: the period's spend so far, today's partial day included — the
    forecast, its low and high are never below it. `fitted`: `fit(daily, as_of=as_of)` when the caller forecasts
    several periods from the same spend (the same figures, fitted once). Method: the module docstring."""
    actual = sum((v or ZERO for d, v in daily.items() if start <= d < min(as_of, end)), ZERO)
    first_ahead = max(as_of, start)
    days_left = max(0, (end - first_ahead).days)
    floor = max(actual, at_least or ZERO)
    if not days_left:
        return Forecast(start, end, as_of, actual, floor, floor, floor, 0, "the period is over")
    if fitted is None:
        fitted = fit(daily, as_of=as_of)
    elif fitted.as_of != as_of:
        raise ValueError(f"fitted on {fitted.as_of}, not on {as_of}")
    if fitted.model is None:
        return Forecast(start, end, as_of, actual, None, None, None, days_left, "not enough history")
    ahead = pd.date_range(first_ahead, periods=days_left, freq="D")
    point, spread, method = fitted.model(ahead)
    rest, low, high = (_cents(x) for x in (point, max(0.0, point - Z_80 * spread), point + Z_80 * spread))
    return Forecast(
        start,
        end,
        as_of,
        actual,
        max(floor, actual + rest),
        max(floor, actual + low),
        max(floor, actual + high),
        days_left,
        method,
    )


def _cents(value: float) -> Decimal:
    return Decimal(f"{value:.2f}")


def _history(daily: Mapping[dt.date, Decimal | None], as_of: dt.date) -> pd.Series | None:
    """The spend of the HISTORY_DAYS complete days before `as_of`, from the first with spend; None when fewer than
    MIN_HISTORY_DAYS had any."""
    first = history_start(as_of)
    spent = {d: float(v) for d, v in daily.items() if first <= d < as_of and v}
    if len(spent) < MIN_HISTORY_DAYS:
        return None
    days = pd.date_range(min(spent), as_of - dt.timedelta(days=1), freq="D")
    return pd.Series(spent, dtype=float).rename(index=pd.Timestamp).reindex(days, fill_value=0.0)


def _model(history: pd.Series) -> Model:
    """The history's model: a function of the days ahead giving their forecast spend, summed, its standard
    deviation, and the method in words."""
    n = len(history)
    if n < PROFILE_MIN_DAYS:
        level = history.mean()
        noise = history.std(ddof=1) if n > 1 else 0.0

        def flat(ahead: pd.DatetimeIndex) -> tuple[float, float, str]:
            k = len(ahead)
            return level * k, noise * math.sqrt(k + k * k / n), f"daily mean of the last {n} days"

        return flat
    factors = _weekday_factors(history)
    deseasonalised = history / factors.reindex(history.index.dayofweek).to_numpy()
    recent = deseasonalised.iloc[-TREND_DAYS:]
    m = len(recent)
    t = np.arange(m, dtype=float)
    y = recent.to_numpy()
    s_xx = float(((t - t.mean()) ** 2).sum())
    slope, intercept = np.polyfit(t, y, 1)
    # A one-off day (a monthly tax or credit line, an incident) must not move the level: residuals beyond
    # OUTLIER_MADS robust deviations are clipped and the line fitted again, until none is (at most OUTLIER_PASSES).
    residuals = y - (intercept + slope * t)
    for _ in range(OUTLIER_PASSES):
        bound = OUTLIER_MADS * 1.4826 * float(np.median(np.abs(residuals - np.median(residuals))))
        if not bound or np.abs(residuals).max() <= bound:
            break
        y = intercept + slope * t + np.clip(residuals, -bound, bound)
        slope, intercept = np.polyfit(t, y, 1)
        residuals = y - (intercept + slope * t)
    noise = float(np.sqrt((residuals**2).sum() / max(1, m - 2)))
    # Shrink the slope by its own evidence (t² / (t² + TREND_SHRINK)): a clear ramp is followed, noise is not
    # extrapolated; the line keeps passing through the window's mean.
    t_stat_2 = (slope**2) * s_xx / (noise**2) if noise else math.inf
    slope = slope * (t_stat_2 / (t_stat_2 + TREND_SHRINK) if math.isfinite(t_stat_2) else 1.0)
    intercept = float(y.mean()) - slope * float(t.mean())

    def by_weekday_with_trend(ahead: pd.DatetimeIndex) -> tuple[float, float, str]:
        k = np.arange(1, len(ahead) + 1, dtype=float)
        damped = np.cumsum(DAMPING**k)  # Σ φ^i for i ≤ k: how far the damped trend has carried the level by day k
        last = intercept + slope * (m - 1)
        levels = np.maximum(0.0, last + slope * damped)
        weights = factors.reindex(ahead.dayofweek).to_numpy()
        point = float((levels * weights).sum())
        # Var(Σ w_k ŷ_k): the noise of each day, and the line's own uncertainty (level and slope) carried to each
        # day.
        t_ahead = (m - 1) + damped
        line = (weights.sum() ** 2) / m + float((weights * (t_ahead - t.mean())).sum()) ** 2 / s_xx
        spread = noise * math.sqrt(float((weights**2).sum()) + line)
        return point, spread, f"by day of week with trend, from the last {n} days"

    return by_weekday_with_trend


def _weekday_factors(history: pd.Series) -> pd.Series:
    """Each weekday's spend relative to the week's average (0 = Monday … 6 = Sunday), mean 1."""
    centred = history.rolling(7, center=True).mean()
    ratios = (history / centred).where(centred > 0).dropna()
    by_day = ratios.groupby(ratios.index.dayofweek)
    factors = by_day.median().reindex(range(7))
    # Shrink each weekday's factor toward 1 by its evidence: (f − 1)² against the squared standard error of its
    # median (≈ 1.25 σ / √n). A real rhythm (weekends at half a weekday) stays whole; noise is not read as one.
    error_2 = (1.25 * by_day.std(ddof=1) / np.sqrt(by_day.count())).reindex(range(7)) ** 2
    excess_2 = (factors - 1) ** 2
    weight = (excess_2 / (excess_2 + error_2)).fillna(0.0)
    factors = (1 + weight * (factors - 1)).fillna(1.0).clip(lower=0.05)
    return factors / factors.mean()


def run_rate(
    daily: Mapping[dt.date, Decimal | None], *, start: dt.date, end: dt.date, as_of: dt.date, days: int = 7
) -> Decimal | None:
    """The naive forecast the back-test compares with (docs/forecast.md) — the period's actual spend + the mean of
    the last `days` complete days × the days left. Not for pages: they call `forecast`."""
    first = as_of - dt.timedelta(days=days)
    window = [v or ZERO for d, v in daily.items() if first <= d < as_of]
    if not window:
        return None
    actual = sum((v or ZERO for d, v in daily.items() if start <= d < min(as_of, end)), ZERO)
    return actual + sum(window, ZERO) / days * max(0, (end - max(as_of, start)).days)
