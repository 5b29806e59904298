"""A cap's card, as /caps/, a team page and the overview show it (templates/finops/partials/cap_cards.html): its
status (finops.alerts.selectors.caps.cap_statuses, the one definition of spent, forecast and status) and the
geometry of its progress bar. Here rather than in the caps' views, so that the spend pages (a team page, the
overview) show the same cards without reaching into another domain's pages."""

from decimal import Decimal

from finops.alerts.selectors.caps import CapStatus, cap_statuses
from finops.web.period import today_utc

HUNDRED = Decimal(100)


def bar(status: CapStatus) -> dict:
    """The progress bar's geometry, in % of its width: the bar spans the cap (100 %) or, when the spend or the
    forecast goes past it, up to the larger of the two, so the overshoot stays visible."""
    spent = status.percent
    forecast = status.forecast_percent
    span = max(HUNDRED, spent, forecast or 0)
    scale = lambda value: float(min(HUNDRED, value / span * HUNDRED))  # noqa: E731 - floats only for CSS widths
    return {
        "fill": scale(spent),
        "cap": scale(HUNDRED),
        "forecast": None if forecast is None else scale(forecast),
        "thresholds": [scale(Decimal(t)) for t in status.cap.thresholds if t != 100],
        "percent": float(spent),
    }


def cap_cards(caps) -> list[dict]:
    """A card per cap for the period holding today: its CapStatus (finops.alerts.selectors.caps.cap_statuses, the one
    definition of spent, forecast and status) and its bar. /caps/, a team page and the overview show these."""
    return [{"cap": s.cap, "status": s, "bar": bar(s)} for s in cap_statuses(list(caps), today=today_utc())]
