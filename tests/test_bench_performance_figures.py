"""The performance pages' figures on a page-bench organisation (issue 23's done-when item): what the SQL rollup
merged (finops.performance.services.performance_rollup: cells unnested, summed per bin, gathered again) held
against the same figures merged in Python, independently, from the raw lines' latency cells (Performance.of_line,
absorb_cells).

The organisation is the page bench's generator at small scale (bench/org.py, bench/lines.py: two gateway accounts
whose every line carries ~20 requests' distributions), so the rollup runs over the shapes the 10M-line bench times:
many lines per day × workload × model, spans of whole months and edge days. Checked before and after a
re-attribution moving a fifth of the lines (the rebuild limited to the moved workloads, regrouping the signature-day
rows without reading a line): the workload performance table with its p99 against the SLA, the scorecard's rows,
each provider's measured speed, and every signature-day, daily and monthly rollup row against the raw lines. Real
Postgres.
"""

import datetime as dt
from collections import Counter, defaultdict

import pytest

from bench import pages
from finops.models import (
    AttributionRule,
    DailyPerformance,
    LinesAloneDay,
    MonthlyPerformance,
    Provider,
    SignatureDailyPerformance,
    UsageLine,
    User,
    Workload,
)
from finops.performance.measures import COLUMNS, LINE_COLUMNS, Performance
from finops.performance.selectors.performance import P99, workload_verdict
from finops.performance.selectors.scorecard import Quarter, quarter_key, scorecard
from finops.performance.selectors.workload_performance import figures, provider_speed, workload_section
from finops.spend.services.attribution import history_reattribute

LINES = 20_000


@pytest.fixture
def generated(db):
    return pages.generate(LINES, echo=lambda *_: None)


def _raw() -> list[tuple]:
    """Every timed line: (day, hour, account, provider, model, workload, team, its Performance), read from the line
    itself and its signature, merged in Python."""
    rows = UsageLine.objects.filter(errors__isnull=False).values_list(
        "id",
        "period_start",
        "account_id",
        "provider_id",
        "model",
        "signature__workload_id",
        "signature__team_id",
        "signature_id",
        "requests",
        *LINE_COLUMNS,
    )
    found = []
    for line_id, start, account, provider, model, workload, team, signature, requests, *columns in rows.iterator(
        chunk_size=5000
    ):
        start = start.astimezone(dt.UTC)
        performance = Performance.of_line(requests, columns)
        found.append(
            (start.date(), start.hour, account, provider, model, workload, team, line_id, signature, performance)
        )
    assert len(found) > 1000  # the gateway accounts' lines: enough to merge many per row
    return found


def _merged(raw, key, *, where=lambda line: True) -> dict:
    out: dict = defaultdict(Performance)
    for line in raw:
        if where(line):
            out[key(line)].absorb(line[-1])
    return out


def _columns(performance: Performance) -> dict:
    columns = performance.columns()
    columns["latency"] = sorted(columns["latency"] or [])
    return columns


def _stored(model, period: str, keys=("account_id", "provider_id", "model", "workload_id", "team_id")) -> dict:
    found = {}
    for row in model.objects.values(period, *keys, *COLUMNS):
        key = tuple(row[name] for name in (period, *keys))
        assert row["latency"] == sorted(row["latency"])  # what performance_totals' width_bucket relies on
        found[key] = {name: row[name] for name in COLUMNS} | {"latency": sorted(row["latency"] or [])}
    return found


def _check_rows(raw) -> None:
    """Every signature-day, daily and monthly performance row equals the Python merge of its raw lines, cell for
    cell (the bench has no reported metrics and no summary-only lines, so every row comes from lines)."""
    by_signature = _merged(raw, lambda line: (line[0], line[8], line[2]))
    # A line alone in its signature-day may have no row (its account's day marked: the daily regroup reads it).
    stored = _stored(SignatureDailyPerformance, "day", ("signature_id", "account_id"))
    assert stored == {key: _columns(p) for key, p in by_signature.items() if key in stored}
    lines_of = Counter((line[0], line[8], line[2]) for line in raw)
    marked = set(LinesAloneDay.objects.values_list("day", "account_id"))
    assert all(lines_of[key] == 1 and (key[0], key[2]) in marked for key in set(by_signature) - set(stored))
    daily = _merged(raw, lambda line: line[0:1] + line[2:7])
    assert _stored(DailyPerformance, "day") == {key: _columns(p) for key, p in daily.items()}
    monthly = _merged(raw, lambda line: (line[0].replace(day=1), *line[2:7]))
    assert _stored(MonthlyPerformance, "month") == {key: _columns(p) for key, p in monthly.items()}
    hours = defaultdict(int)
    for line in raw:
        hours[line[0:1] + line[2:7]] |= 1 << line[1]
    stored_hours = {
        (row[0], *row[1:6]): row[6]
        for row in DailyPerformance.objects.values_list(
            "day", "account_id", "provider_id", "model", "workload_id", "team_id", "hours"
        )
    }
    assert stored_hours == dict(hours)
    signature_hours = defaultdict(int)
    for line in raw:
        if (line[0], line[8], line[2]) in stored:
            signature_hours[line[0], line[8]] |= 1 << line[1]
    assert dict(signature_hours) == {
        (day, signature): hours
        for day, signature, hours in SignatureDailyPerformance.objects.values_list("day", "signature_id", "hours")
    }


def _spans(raw) -> tuple[dt.date, dt.date]:
    """A span of whole months with edge days at both ends: read from MonthlyPerformance and DailyPerformance."""
    days = sorted({line[0] for line in raw})
    start, end = days[len(days) // 5], days[4 * len(days) // 5]
    start, end = (day + dt.timedelta(days=day.day == 1) for day in (start, end))  # mid-month edges, whatever today is
    assert (end.year, end.month) > (start.year, start.month + 1)
    return start, end


def _check_pages(raw) -> None:
    start, end = _spans(raw)
    in_span = lambda line: start <= line[0] < end  # noqa: E731
    hours: dict = defaultdict(lambda: defaultdict(int))  # workload → day → the UTC hours with requests (bit h)
    for line in raw:
        if in_span(line):
            hours[line[5]][line[0]] |= 1 << line[1]
    workloads = {w.id: w for w in Workload.objects.all()}

    # The workload page's performance table (provider × model rows and the workload's row, p99 against the SLA).
    by_model = _merged(raw, lambda line: (line[5], line[3], line[4]), where=in_span)
    by_workload = _merged(raw, lambda line: line[5], where=in_span)
    timed = [w for w in by_workload if w is not None]
    assert len(timed) >= 3  # at 20k lines the gateways serve a few workloads (and unattributed keys)
    for workload_id in timed:
        workload = workloads[workload_id]
        section = workload_section(workload, start, end)
        sla_ms = float(workload.sla_seconds) * 1000 if workload.sla_seconds is not None else None
        expected = {(provider, model): p for (w, provider, model), p in by_model.items() if w == workload_id}
        assert {(r["provider_id"], r["model"]) for r in section.rows} == set(expected)
        for row in section.rows:
            performance = expected[row["provider_id"], row["model"]]
            assert {k: row[k] for k in figures(performance)} == figures(performance)
            if row["share_over_sla"] is not None:
                assert row["share_over_sla"] == performance.share_over(sla_ms)
        whole = by_workload[workload_id]
        assert {k: section.total[k] for k in figures(whole)} == figures(whole)
        assert section.verdict == workload_verdict(workload, whole, hours.get(workload_id))
        assert section.total["p99_s"] is not None and whole.p_ms(P99) is not None

    # Each provider's measured speed (as an admin: every request, unattributed included).
    by_provider_model = _merged(raw, lambda line: (line[3], line[4]), where=in_span)
    for provider in Provider.objects.filter(id__in={line[3] for line in raw}):
        speed = provider_speed(provider, None, start, end)
        expected = {model: p for (provider_id, model), p in by_provider_model.items() if provider_id == provider.id}
        assert {row["model"] for row in speed} == set(expected)
        for row in speed:
            assert {k: row[k] for k in figures(expected[row["model"]])} == figures(expected[row["model"]])

    # The scorecard of a span of whole months and edge days, compared with the span before it.
    admin = pages._user("figures-admin", User.Role.ADMIN)
    before_start = start - (end - start)
    span = Quarter(quarter_key(start), start, end, "span", end, before_start, start, "the span before")
    before = _merged(raw, lambda line: line[5], where=lambda line: before_start <= line[0] < start)
    rows = {row["workload_id"]: row for row in scorecard(admin, span, today=pages.today()).rows}
    for workload_id in timed:
        row, performance = rows[workload_id], by_workload[workload_id]
        assert row["p99_ms"] == performance.p_ms(0.99)
        assert row["measured_requests"] == performance.all_requests and row["errors"] == performance.all_errors
        assert row["tokens_per_s"] == performance.output_tokens_per_s[0]
        assert row["verdict_detail"] == workload_verdict(workloads[workload_id], performance, hours.get(workload_id))
        if workload_id in before:
            assert row["previous"].p99_ms == before[workload_id].p_ms(0.99)


def test_the_sql_rollup_gives_the_figures_of_the_raw_lines_latency_before_and_after_a_reattribution(generated):
    raw = _raw()
    _check_rows(raw)
    _check_pages(raw)

    # A reorganisation as the bench's (pages.move_rules: the rules repointed to a workload of another team), of
    # the workloads the gateways serve, so that timed lines move.
    timed = sorted({line[5] for line in raw if line[5] is not None})
    for workload in Workload.objects.filter(id__in=timed[:2]):
        target = Workload.objects.exclude(team=workload.team).order_by("id").first()
        assert AttributionRule.objects.filter(workload=workload).update(workload=target) > 0
    assert history_reattribute().lines > 0
    after = _raw()
    workload_of = {line[7]: line[5] for line in raw}
    assert sum(workload_of[line[7]] != line[5] for line in after) > len(after) // 20  # timed lines moved too
    _check_rows(after)
    _check_pages(after)
