"""Each signature-day performance row is the merge of its lines, and each daily row the merge of its signature-day
rows and of the lines alone (issue 23), whichever way the rollup gets there: a (day, signature) of one line — nearly
every line of a gateway log whose keys, users and teams are drawn apart — has no row (its account's day is marked,
and the daily regroup reads the line), one of several lines is merged bin by bin (the lines alone then kept apart,
or all given a row once a week's lines mostly share), and a (day, signature) whose lines came from two imports is
merged across them; the daily rows again after a re-attribution. Held against the raw
lines merged in Python (Performance.of_line, absorb), cell for cell, through the real import path on Postgres.
"""

import csv
import datetime as dt
import io
from collections import Counter, defaultdict

from bench.gateway_export import write_spend_logs_csv
from finops.models import (
    Account,
    AttributionRule,
    DailyPerformance,
    LinesAloneDay,
    LineSignature,
    MonthlyPerformance,
    Provider,
    SignatureDailyPerformance,
    Team,
    UsageLine,
    Workload,
)
from finops.performance.measures import COLUMNS, LINE_COLUMNS, Performance
from finops.performance.selectors.performance import P99
from finops.performance.selectors.workload_performance import figures, workload_section
from finops.performance.services.performance_rollup import reported_changed
from finops.spend.services.attribution import history_reattribute
from ingest.retention import usage_lines_prune
from ingest.services import usage_file_import

KEYS = ("account_id", "provider_id", "model", "workload_id", "team_id")
WEEK = dt.timedelta(days=7)


def _import(account: Account, data: bytes, name: str) -> None:
    run = usage_file_import(account=account, stream=io.BytesIO(data), file_name=name)
    assert run.status == "succeeded", run.error


def _halves(data: bytes) -> tuple[bytes, bytes]:
    """The log's requests started before noon (UTC) and the rest, as two files: two imports whose hours never
    overlap, so neither replaces the other's lines, and a day's signature holds lines of both."""
    rows = list(csv.reader(io.StringIO(data.decode())))
    header, body = rows[0], rows[1:]
    start = header.index("startTime")
    halves = ([], [])
    for row in body:
        halves[dt.datetime.fromisoformat(row[start]).astimezone(dt.UTC).hour >= 12].append(row)
    out = []
    for half in halves:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([header, *half])
        out.append(text.getvalue().encode())
    return out[0], out[1]


def _raw_lines() -> list[tuple]:
    """Every timed line: (day, hour, signature, account, provider, model, workload, team, its Performance)."""
    found = []
    for start, signature, *rest in UsageLine.objects.filter(errors__isnull=False).values_list(
        "period_start",
        "signature_id",
        "signature__account_id",
        "signature__provider_id",
        "signature__model",
        "signature__workload_id",
        "signature__team_id",
        "requests",
        *LINE_COLUMNS,
    ):
        keys, requests, columns = rest[: len(KEYS)], rest[len(KEYS)], rest[len(KEYS) + 1 :]
        start = start.astimezone(dt.UTC)
        found.append((start.date(), start.hour, signature, *keys, Performance.of_line(requests, columns)))
    return found


def _columns(performance: Performance) -> dict:
    columns = performance.columns()  # built once: it serialises the whole distribution
    return columns | {"latency": sorted(columns["latency"] or [])}


def _stored(model, period: str, keys: tuple) -> dict:
    found = {}
    for row in model.objects.values(period, *keys, *COLUMNS):
        assert row["latency"] == sorted(row["latency"])  # sorted by bin, one cell a bin: what the pages read
        found[tuple(row[name] for name in (period, *keys))] = {name: row[name] for name in COLUMNS}
    return found


def test_each_signature_day_and_daily_row_is_the_merge_of_its_lines_alone_shared_or_from_two_imports(db, tmp_path):
    groq = Provider.objects.get(slug="groq")
    team = Team.objects.create(name="Support")
    workload = Workload.objects.create(name="Agent", slug="agent", team=team, sla_seconds=20)
    AttributionRule.objects.create(workload=workload, priority=1, user="user-07")
    AttributionRule.objects.create(workload=workload, priority=2, model="*qwen*")
    files = {}
    for shape, seed, requests in (("scattered", 3, 3000), ("proxy", 4, 20_000)):
        path = tmp_path / f"{shape}.csv"
        write_spend_logs_csv(path, requests, seed=seed, shape=shape)
        files[shape] = path.read_bytes()
    scattered = Account.objects.create(name="scattered", provider=groq, connector="gateway_log")
    _import(scattered, files["scattered"], "scattered.csv")
    proxy = Account.objects.create(name="proxy", provider=groq, connector="gateway_log")
    _import(proxy, files["proxy"], "proxy.csv")
    split = Account.objects.create(name="proxy in two files", provider=groq, connector="gateway_log")
    morning, afternoon = _halves(files["proxy"])
    _import(split, morning, "morning.csv")
    _import(split, afternoon, "afternoon.csv")

    raw = _raw_lines()
    lines_of = Counter((day, signature) for day, _, signature, *_ in raw)
    assert 1 in lines_of.values() and max(lines_of.values()) > 1  # rows of one line and of several
    # Most of the proxy log's lines share their signature-day in its first week, so the rollup merges its later
    # weeks whole (performance_rollup._signature_days_merge); the scattered log's lines are mostly alone.
    for account, mostly_alone in ((scattered, True), (proxy, False)):
        first = min(day for day, _, _, owner, *_ in raw if owner == account.id)
        week = [(day, signature) for day, _, signature, owner, *_ in raw if owner == account.id and day < first + WEEK]
        assert (2 * sum(lines_of[key] == 1 for key in week) >= len(week)) is mostly_alone
    runs_of = defaultdict(set)
    for line in UsageLine.objects.filter(account=split).values_list("period_start", "signature_id", "ingest_run_id"):
        runs_of[line[0].astimezone(dt.UTC).date(), line[1]].add(line[2])
    assert any(len(runs) == 2 for runs in runs_of.values())  # a signature's day holds lines of both imports

    by_signature_day, daily, monthly = defaultdict(Performance), defaultdict(Performance), defaultdict(Performance)
    hours = defaultdict(int)
    for day, hour, signature, *keys, performance in raw:
        by_signature_day[day, signature, keys[0]].absorb(performance)
        daily[(day, *keys)].absorb(performance)
        monthly[(day.replace(day=1), *keys)].absorb(performance)
        hours[day, signature] |= 1 << hour
    # A (day, signature) of several lines is their merged row; one of a line alone has none, its account's day
    # marked so that the daily regroup reads the line itself (the scattered log's nearly all, the proxy log's first
    # week's; its later weeks, merged whole, keep a row for every line).
    stored = _stored(SignatureDailyPerformance, "day", ("signature_id", "account_id"))
    assert stored == {key: _columns(p) for key, p in by_signature_day.items() if key in stored}
    marked = set(LinesAloneDay.objects.values_list("day", "account_id"))
    alone = set(by_signature_day) - set(stored)
    assert all(lines_of[day, signature] == 1 and (day, account) in marked for day, signature, account in alone)
    assert sum(account == scattered.id for *_, account in alone) > 0.9 * sum(
        account == scattered.id for *_, account in by_signature_day
    )
    assert any(
        account == proxy.id and lines_of[day, signature] == 1 for day, signature, account in set(stored)
    )  # a line alone in a week merged whole
    with_row = {(day, signature) for day, signature, _ in stored}
    assert {
        (day, signature): bits
        for day, signature, bits in SignatureDailyPerformance.objects.values_list("day", "signature_id", "hours")
    } == {key: bits for key, bits in hours.items() if key in with_row}
    assert _stored(DailyPerformance, "day", KEYS) == {key: _columns(p) for key, p in daily.items()}
    assert _stored(MonthlyPerformance, "month", KEYS) == {key: _columns(p) for key, p in monthly.items()}

    # What the workload's page shows: the p99 of every request of the period, from the merged rows.
    days = sorted({line[0] for line in raw})
    section = workload_section(workload, days[0], days[-1] + dt.timedelta(days=1))
    whole = Performance()
    for line in raw:
        if line[6] == workload.id:
            whole.absorb(line[-1])
    assert whole.p_ms(P99) is not None and {k: section.total[k] for k in figures(whole)} == figures(whole)

    # A re-attribution moves signatures, never lines: the daily rows are regrouped from the signature-day rows and
    # the lines alone of the marked days, and still equal the raw lines merged.
    AttributionRule.objects.filter(workload=workload, user="user-07").update(user="user-11")
    assert history_reattribute().lines > 0
    # The lines are where they were (same hours, same signatures), so each keeps the Performance read above and takes
    # its signature's keys as they are now: the lines' latency columns are not read and converted a second time.
    still = Counter()
    for start, signature in UsageLine.objects.filter(errors__isnull=False).values_list("period_start", "signature_id"):
        still[start.astimezone(dt.UTC).date(), start.astimezone(dt.UTC).hour, signature] += 1
    assert still == Counter((day, hour, signature) for day, hour, signature, *_ in raw)
    keys_of = {row[0]: row[1:] for row in LineSignature.objects.values_list("id", *KEYS)}
    moved = [(day, hour, signature, *keys_of[signature], line[-1]) for day, hour, signature, *line in raw]
    assert {line[2]: line[6] for line in moved} != {line[2]: line[6] for line in raw}  # timed lines moved
    daily = defaultdict(Performance)
    for day, _, _, *keys, performance in moved:
        daily[(day, *keys)].absorb(performance)
    assert _stored(DailyPerformance, "day", KEYS) == {key: _columns(p) for key, p in daily.items()}

    # A prune of the raw lines (ingest/retention.py) first gives the lines alone signature-day rows of their own: the
    # daily rows regrouped after it (reported metrics of the workload) are still those of the deleted lines.
    before = _stored(DailyPerformance, "day", KEYS)
    now = dt.datetime.combine(days[-1] + dt.timedelta(days=62), dt.time(), tzinfo=dt.UTC)  # every line's month past
    assert usage_lines_prune(now=now, months=1).deleted >= len(raw) and not UsageLine.objects.exists()
    assert not LinesAloneDay.objects.exists()
    reported_changed(workload_ids={workload.id}, days=set(days))
    assert _stored(DailyPerformance, "day", KEYS) == before
