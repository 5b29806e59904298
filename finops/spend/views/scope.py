"""What every spend page reads first (pages.py, providers.py): the viewer's scope over the period the URL names — the
daily rollup they may see, the period and its comparison, the one pass by day (a day grid) its tiles, chart and
forecast read — and a table's rows with their unit prices."""

import datetime as dt
from urllib.parse import quote

from django.conf import settings
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS

from finops.core import display
from finops.models import MonthlySpend, Provider, TeamDailySpend
from finops.reports import charts
from finops.spend.selectors import day_grid, spend
from finops.web.period import period_from_request, picker_context, today_utc, with_period
from finops.web.tables import csv_requested

SLUG_MARK = "slug-mark"  # a slug standing in for every slug in Scope.slug_links (a valid one: reverse checks)


class Scope:
    """What one page reads: the viewer's daily and monthly rows (narrowed alike), over the URL's period."""

    def __init__(self, request, *, chart_by: str, month_spans: bool = False, by_team: bool = False, **narrow):
        """`chart_by`: the dimension the page's chart stacks by; `month_spans`: the page shows month to date
        and the forecast too (the overview); `by_team`: the grid reads TeamDailySpend (the overview: its chart is
        by provider and it narrows nothing but by the viewer's teams)."""
        self.request = request
        self.user = request.user
        self.today = today_utc()
        self.period = period_from_request(request)
        self.daily = spend.visible_spend(self.user).filter(**narrow)
        self.monthly = spend.visible_spend(self.user, MonthlySpend).filter(**narrow)
        self.by_team = spend.visible_spend(self.user, TeamDailySpend).filter(**narrow) if by_team else None
        self.long = self.period.days > spend.DAILY_READ_MAX_DAYS
        self.chart_by = chart_by
        self.spans = {
            "now": self.period.span(),
            **({"before": self.period.compare.span()} if self.period.compare else {}),
            **(day_grid.month_spans(self.today) if month_spans else {}),
        }
        self._grid: list[dict] | None | bool = False

    @property
    def grid(self) -> list[dict] | None:
        """Rows by day × chart dimension × charge category over every span the page shows, read once: the
        tiles' totals and the chart come from it. None for spans too far apart (a long or distant period)."""
        if self._grid is False:
            self._grid = (
                None
                if self.long
                else day_grid.day_grid(self.daily, self.spans, (self.chart_by, "charge_category"), by_team=self.by_team)
            )
        return self._grid

    def grid_over(self, start: dt.date, end: dt.date) -> list[dict] | None:
        """The grid when it holds every day of [start, end) (the overview's forecast reads its days from it)."""
        if self.grid is None:
            return None
        first, stop = min(s for s, _ in self.spans.values()), max(e for _, e in self.spans.values())
        return self.grid if first <= start and end <= stop else None

    def sums(
        self,
        *keys: str,
        point: bool = False,
        compare: bool = False,
        months_beyond_days: int = spend.DAILY_READ_MAX_DAYS,
    ) -> list[dict]:
        """`months_beyond_days`: as spend.sums (0: even a month's partial edges read from the monthly rollup)."""
        start, end = (self.period.compare if compare else self.period).span()
        return spend.sums(
            self.daily,
            self.monthly,
            start,
            end,
            keys,
            today=self.today,
            point=("month" if self.long else "day") if point else None,
            months_beyond_days=months_beyond_days,
        )

    def sums_each(self, *keys: str, months_beyond_days: int = spend.DAILY_READ_MAX_DAYS) -> dict[str, list[dict]]:
        """The period's sums by each of `keys` on its own, from one read (spend.sums_each)."""
        return spend.sums_each(
            self.daily, self.monthly, *self.period.span(), keys, today=self.today, months_beyond_days=months_beyond_days
        )

    def totals(self, read: dict[str, list[dict]] | None = None) -> dict[str, spend.Totals]:
        """Each span's Totals. `read`: the sums() rows, grouped by workload_id or more finely, of every span the
        page shows ("now", "before"), when it has read them already (the teams page): added up (spend.totals_of,
        the sums period_sums adds up) rather than read again. Otherwise from the grid, or read."""
        if read is not None and read.keys() == self.spans.keys():
            return {name: spend.totals_of(rows) for name, rows in read.items()}
        if self.grid is not None:
            return day_grid.grid_span_totals(self.grid, self.spans)
        found = spend.period_sums(
            self.daily, self.monthly, {k: v for k, v in self.spans.items() if k in ("now", "before")}, today=self.today
        )
        if len(self.spans) > len(found):
            found.update(spend.period_totals(self.daily, {k: v for k, v in self.spans.items() if k not in found}))
        return found

    def chart_rows(self) -> list[dict]:
        """[{point, <chart_by>, charge_category, cost, …}] over the period: by day, or by month when long."""
        if self.grid is not None:
            return day_grid.grid_points(self.grid, *self.period.span())
        return self.sums(self.chart_by, "charge_category", point=True)

    def chart(self, labels: dict, rows: list[dict] | None = None) -> dict:
        rows = [{**r, "day": r["point"]} for r in (self.chart_rows() if rows is None else rows)]
        if self.chart_by == "model":
            labels = {r["model"]: display.model_name(r["model"]) for r in rows}
        return charts.stacked_daily(
            rows, self.chart_by, labels, currency=settings.FINOPS_REPORTING_CURRENCY, monthly=self.long
        )

    def tokens_chart(self) -> dict:
        return charts.daily_tokens(spend.daily_tokens(spend.period(self.daily, *self.period.span()), monthly=self.long))

    def link(self, name: str, *args) -> str:
        return with_period(reverse(name, args=args), self.period)

    def slug_links(self, name: str):
        """link(name, slug) for many slugs: the URL reversed once and each slug put in, quoted as reverse quotes
        it (the overview's few hundred workload rows spent ~3 ms of a request resolving the same pattern)."""
        before, after = self.link(name, SLUG_MARK).split(SLUG_MARK)
        return lambda slug: f"{before}{quote(slug, safe=RFC3986_SUBDELIMS + '/~:@')}{after}"

    def csv(self, prefix: str, tables: dict):
        return csv_requested(self.request, prefix, tables, stem=f"{self.period.start}-{self.period.end}")

    def context(self, **extra) -> dict:
        totals = self.totals()
        now, before = totals["now"], totals.get("before")
        return {
            **picker_context(self.request),
            "totals": now,
            "before": before,
            "span_totals": totals,
            "change": spend.change(now.cost, before.cost if before else None),
            **extra,
        }


def provider_names() -> dict:
    return dict(Provider.objects.values_list("id", "name"))


def unit_rows(rows: list[dict], key: str, labels: dict | None = None, *, grouped: bool = False) -> list[dict]:
    """Provider or model rows of a $/M table, known spend first; models by their display names. `grouped`: `rows`
    are by `key` already (else finer rows, regrouped)."""
    found = spend.by_cost(rows if grouped else spend.regroup(rows, key))
    for row in found:
        row["label"] = labels.get(row[key], "?") if labels is not None else display.model_name(row[key])
        row["muted"] = key == "model" and not row[key]
    return found
