"""The quarterly scorecard page (issue 12): `/scorecard/?quarter=2026Q4&team=<slug>&sort=<column>&dir=asc|desc`,
with its CSV (`&csv=scorecard`) and XLSX (`&xlsx=scorecard`) downloads of the same table spec
(finops.performance.tables.scorecard). Figures from finops.performance.selectors.scorecard; who sees what from
finops.core.access (a member asking for another team's slug gets 404, as everywhere)."""

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from finops.core import access
from finops.performance.selectors import scorecard as selectors
from finops.performance.tables.scorecard import SCORECARD
from finops.web.page_cache import cached_page
from finops.web.period import today_utc
from finops.web.tables import csv_response, xlsx_response

DEFAULT_SORT = "cost"


def sort_of(request) -> tuple[str, str]:
    """The column and direction the URL asks for; an unknown column sorts by spend (biggest first)."""
    sortable = {c.key for c in SCORECARD.page_columns if c.sort}
    key = request.GET.get("sort") or DEFAULT_SORT
    if key not in sortable:
        key = DEFAULT_SORT
    direction = request.GET.get("dir")
    if direction not in ("asc", "desc"):
        direction = "asc" if key in ("label", "team") else "desc"
    return key, direction


@require_safe
@cached_page
def scorecard_page(request):
    user, today = request.user, today_utc()
    team = access.get_visible_team_or_404(user, request.GET["team"]) if request.GET.get("team") else None
    quarter_error = ""
    try:
        quarter = selectors.quarter(request.GET.get("quarter"), today=today)
    except selectors.QuarterError as error:
        quarter_error = str(error)
        quarter = selectors.quarter(None, today=today)
    card = selectors.scorecard(user, quarter, today=today, team=team)
    key, direction = sort_of(request)
    rows = selectors.sort_rows(card.rows, key, descending=direction == "desc")
    for row in rows:
        row["url"] = reverse("workload-detail", args=[row["slug"]])
    stem = f"scorecard-{quarter.key}{'-' + team.slug if team else ''}"
    if request.GET.get("csv") == SCORECARD.name:
        return csv_response(stem, SCORECARD, rows)
    if request.GET.get("xlsx") == SCORECARD.name:
        team_part = f" — {team.name}" if team else ""
        title = f"Quarterly scorecard — {quarter.title}{team_part} (compared with {quarter.compare_label})"
        return xlsx_response(stem, SCORECARD, rows, title=title, sheet=quarter.title)
    query = request.GET.copy()
    query.pop("csv", None)
    query.pop("xlsx", None)
    downloads = {}
    for kind in ("csv", "xlsx"):
        download = query.copy()
        download[kind] = SCORECARD.name
        downloads[kind] = f"?{download.urlencode()}"
    return render(
        request,
        "finops/scorecard.html",
        {
            "card": card,
            "quarter": quarter,
            "quarter_error": quarter_error,
            "rows": rows,
            "spec": SCORECARD,
            "sort": {"key": key, "dir": direction},
            "quarters": _choices(user, quarter, today),
            "can_see_all": access.sees_everything(user),
            "teams": access.visible_teams(user).order_by("name"),
            "team": team,
            "downloads": downloads,
            "verdicts": _verdict_counts(rows),
        },
    )


def _choices(user, quarter, today) -> list[tuple[str, str]]:
    """The picker's quarters, with the one shown even when it holds nothing (asked for by URL)."""
    found = selectors.quarter_choices(user, today=today)
    if quarter.key not in dict(found):
        found = sorted([*found, (quarter.key, quarter.label)], reverse=True)
    return found


def _verdict_counts(rows: list[dict]) -> list[tuple[str, str, int]]:
    counts: dict[str, list] = {}
    for row in rows:
        verdict = row["verdict"]
        counts.setdefault(verdict["status"], [verdict["label"], 0])[1] += 1
    return [(status, *counts[status]) for status in selectors.VERDICT_ORDER if status in counts]
