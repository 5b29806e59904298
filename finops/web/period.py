"""The period picker's view side: the Period a request's URL names (finops.core.reporting_period), the picker's
choices, and the query that carries the period from page to page (navigation, table links)."""

import datetime as dt

from django.utils import timezone

from finops.core.reporting_period import DEFAULT, Period, PeriodError, choices, resolve

PERIOD_PARAMS = ("period", "start", "end")


def today_utc() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def _date(text: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if text else None
    except ValueError:
        raise PeriodError(f"{text!r} is not a day (use YYYY-MM-DD).") from None


def period_from_request(request) -> Period:
    """The period the URL asks for; a bad one falls back to the default, with `request.period_error` saying
    why (the picker shows it): a page never goes blank over a typo in its URL. Read once per request."""
    if not hasattr(request, "_period"):
        today, params = today_utc(), request.GET
        request.period_error = ""
        try:
            request._period = resolve(
                params.get("period"), today=today, start=_date(params.get("start")), end=_date(params.get("end"))
            )
        except PeriodError as error:
            request.period_error = str(error)
            request._period = resolve(DEFAULT, today=today)
    return request._period


def with_period(url: str, period: Period) -> str:
    """`url` keeping the page's period (the default period needs no query)."""
    if period.key == DEFAULT:
        return url
    return f"{url}{'&' if '?' in url else '?'}{period.query()}"


def picker_context(request) -> dict:
    """What templates/finops/partials/period_picker.html needs."""
    period = period_from_request(request)
    return {"period": period, "period_choices": choices(today_utc()), "period_error": request.period_error}
