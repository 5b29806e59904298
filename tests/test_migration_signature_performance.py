"""Upgrading to the signature-day performance rollup (migration 0041) fills it from the lines already stored: each
signature's timed lines of a UTC day merged — counters, the summaries' bound, the latency cells bin by bin, the
hours — the rows the rollup itself writes when those lines are imported, and the Python merge of the raw lines.
So a re-attribution right after the upgrade, which regroups these rows without reading a line, moves latency
exactly as the lines say."""

import datetime as dt
import random
from collections import defaultdict

from finops.performance.measures import COLUMNS, LINE_COLUMNS, Performance
from tests.migration_helpers import database_at, latest, migrate

BEFORE = [("finops", "0040_report_figures_help_path")]
START = dt.datetime(2026, 3, 30, 20, tzinfo=dt.UTC)  # hours over the end of March into April: two months
MODEL = "llama-3.3-70b"

at_0040 = database_at(BEFORE)


def _performance(rng: random.Random) -> Performance:
    performance = Performance()
    for _ in range(rng.randint(1, 30)):
        duration = rng.randint(150, 60_000)
        performance.add_request(
            duration_ms=duration, ttft_ms=rng.randint(0, duration), output_tokens=rng.randint(1, 800), failed=False
        )
    return performance


def _rows() -> dict:
    from finops.models import SignatureDailyPerformance

    return {
        (row["day"], row["signature_id"], row["account_id"]): row
        for row in SignatureDailyPerformance.objects.values("day", "signature_id", "account_id", "hours", *COLUMNS)
    }


def test_the_upgrade_fills_the_signature_day_rollup_as_the_rollup_writes_it(at_0040):
    get = lambda name: at_0040.get_model("finops", name)  # noqa: E731
    groq, _ = get("Provider").objects.get_or_create(slug="groq", defaults={"name": "Groq"})
    account = get("Account").objects.create(name="gateway-0041", provider=groq, connector="gateway_log")
    team = get("Team").objects.create(name="Support", slug="support-0041")
    workload = get("Workload").objects.create(team=team, name="Agent", slug="agent-0041")
    tag_set = get("TagSet").objects.create(id=81, tags={})
    signatures = [
        get("LineSignature").objects.create(
            id=82 + n,
            account=account,
            provider=groq,
            api_key_ref=f"key-{n}",
            model=MODEL,
            model_raw=MODEL,
            tag_set=tag_set,
            workload=workload if n else None,
            team=team if n else None,
        )
        for n in range(2)
    ]
    rng = random.Random(40)
    expected: dict = defaultdict(Performance)
    hours: dict = defaultdict(int)
    for hour in range(40):
        start = START + dt.timedelta(hours=hour)
        for signature in signatures:
            if rng.random() < 0.3:
                continue
            if hour == 7 and signature.id == 82:  # a line from before distributions: a summary and its bound
                performance = Performance(summary_requests=12, summary_p99_ms=4500.0)
            else:
                performance = _performance(rng)
            line = dict(zip(LINE_COLUMNS, performance.line_columns(), strict=True))
            get("UsageLine").objects.create(
                period_start=start,
                period_end=start + dt.timedelta(hours=1),
                account=account,
                provider=groq,
                model=MODEL,
                model_raw=MODEL,
                tag_set=tag_set,
                signature=signature,
                cost_basis="unpriced",
                requests=performance.requests + performance.summary_requests,
                **line,
            )
            key = (start.date(), signature.id, account.id)
            expected[key].absorb(performance)
            hours[key] |= 1 << start.hour
    # a line of another account without per-request data (a FOCUS line): no row
    get("UsageLine").objects.create(
        period_start=START,
        period_end=START + dt.timedelta(hours=1),
        account=account,
        provider=groq,
        model=MODEL,
        model_raw=MODEL,
        tag_set=tag_set,
        signature=signatures[0],
        cost_basis="unpriced",
        requests=5,
    )

    migrate(latest())

    from finops.performance.services.performance_rollup import performance_rollup_rebuild

    backfilled = _rows()
    assert {key: {name: row[name] for name in COLUMNS} for key, row in backfilled.items()} == {
        key: performance.columns() for key, performance in expected.items()
    }
    assert {key: row["hours"] for key, row in backfilled.items()} == dict(hours)
    assert len({day.month for day, *_ in backfilled}) == 2

    performance_rollup_rebuild(days={day for day, *_ in backfilled}, account_ids=[account.id])
    assert _rows() == backfilled  # what the rollup writes from the same lines
