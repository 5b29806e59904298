"""A deterministic generator of the demo organisation's export files (docs/demo.md).

For WINDOW_DAYS days that end the day before `today` (UTC), each demo account gets the file(s) its connector
reads, as a real customer of that provider would produce them (demo/exports.py):
- OpenAI, Anthropic, Moonshot: a usage CSV (`usage_csv`); OpenAI and Anthropic rows carry the billed `cost` in
  USD (list price, 6 decimals), Moonshot rows in CNY (the USD list price converted at the config's rate), so
  its price cut shows as a lower $/M tokens after `price_change_day`;
- AWS Bedrock: a FOCUS 1.2 export per billing month (`focus_file`), billed per token direction, with a Tax or
  Credit row each month;
- Groq, Cerebras and one Moonshot stream (email drafts on Kimi K2.6, through the `moonshot-gateway` account): a
  LiteLLM spend-log CSV (`gateway_log`) with no usable cost: the product estimates it from the catalog; one
  in-house fine-tune on Cerebras has no price anywhere, so the demo shows `unpriced` usage. One record per
  request, as LiteLLM logs them (a few dozen a day per stream), each timed at its provider's market speed with a
  slow tail (spend_logs.SpendLogs): the latency story of issue 12, and per-request figures the what-if can trust
  (issue 28).

The same `today` always gives byte-identical files: randomness comes from seeded random.Random instances,
consumed in a fixed order, and never from the clock. Volumes are token counts (ints); money is only ever
computed in Decimal, from those counts and the list price of the day (the seed catalog, overridden by the
prices in config.yaml).
"""

import datetime as dt
import random
import string
from collections.abc import Collection
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import yaml

from finops.prices.selectors import Tokens

from .exports import DayUsage, DemoAccount, FocusExport, UsageCsv
from .prices import FxRates, PriceList
from .spend_logs import ProxySpendLogs, SpendLogs

# A LiteLLM proxy account (litellm_api) is backfilled from its exported spend logs: the same export as a gateway log.
EXPORTS = {"usage_csv": UsageCsv, "focus_file": FocusExport, "gateway_log": SpendLogs, "litellm_api": ProxySpendLogs}

CONFIG_PATH = Path(__file__).resolve().parent / "config.yaml"
WINDOW_DAYS = 120
PRICE_CHANGE_DAYS_BEFORE_END = 45
SEED = 20260704

# Sales Intelligence launches an outbound campaign three weeks before the end of the window: lead scoring
# runs over the whole CRM and every sales call gets notes, so its daily spend climbs to ~3.5x what it was.
# Its monthly spend stays under SUGGESTED_MONTHLY_CAP_USD before the campaign and goes well over it in the
# last 30 days: the caps feature uses this pair to show a cap breach (and the forecast of one).
CAP_BREACHING_TEAM = "sales"
SUGGESTED_MONTHLY_CAP_USD = Decimal("15000")
RAMP_DAYS = 21
RAMP_EXTRA = 2.5  # volume, not money: extra multiple of normal volume reached on the last day of the window
# A batch workload with a window (config.yaml batch_window_hours) overruns it one calendar day in every
# BATCH_OVERRUN_EVERY_DAYS (the days whose ordinal is a multiple of it): any 30-day period, the default one
# included, has exactly one such night, so its page shows "fails" (issue 12). Chosen by the calendar, not by the
# window, so a day's log covers the same hours whichever window it is generated in.
BATCH_OVERRUN_EVERY_DAYS = 30

# Growth of each team's volume over the window (0.6 = +60% from the first day to the last).
TEAM_GROWTH = {"support": 0.5, "search": 0.7, "devprod": 0.9, "sales": 0.4, "data": 0.6, "marketing": 0.3}
# Volume on Saturdays and Sundays relative to a weekday, by latency profile.
WEEKEND_FACTOR = {"realtime": 0.45, "interactive": 0.4, "batch": 0.85}
# Gateway logs (Groq, Cerebras, the Moonshot gateway) hold one record per request, as LiteLLM writes them: their
# streams' volumes (SERIES) are a few dozen requests a day, so the demo still loads in seconds. A day's log spreads
# its requests over the hours of its first 12–24 (LOG_RECORDS) draws, one per REQUESTS_PER_LOG_HOUR_DRAW of the
# stream's base weekday volume: they depend on the stream and the weekday only (spend_logs.SpendLogs._starts).
LOG_RECORDS = (12, 24)
REQUESTS_PER_LOG_HOUR_DRAW = 4
# How each provider bills in the demo: a currency for billed rows, None for "no cost in the file".
BILLING = {"openai": "USD", "anthropic": "USD", "aws-bedrock": "USD", "moonshot": "CNY", "groq": None, "cerebras": None}
# An in-house fine-tune served on Cerebras: no catalog or config price, so its usage is `unpriced`.
UNPRICED_MODEL = "acme-support-router-ft-8b"


@dataclass(frozen=True)
class Series:
    """One stream of usage lines: a workload's traffic to one model through one account and API key."""

    workload: str | None  # None: a personal sandbox key, untagged (shows as unattributed)
    account: str
    model: str  # as the provider writes it; the product normalises it
    requests: int  # per weekday at the start of the window
    input_per_request: int  # all input tokens, cached and cache writes included
    output_per_request: int
    cached: float = 0.0  # share of input read from the prompt cache
    cache_write: float = 0.0  # share of input written to the cache
    env: str = "prod"


SERIES = (
    # Support Platform
    Series("support-agent", "anthropic-prod", "claude-sonnet-4-5-20250929", 18_000, 6_000, 450, 0.55, 0.05),
    # Its nightly job summarises each day's tickets for the morning: the same model, batch-eligible (issue 28).
    Series("support-agent-nightly", "anthropic-prod", "claude-sonnet-4-5-20250929", 2_000, 10_000, 700, 0.3, 0.05),
    Series("support-agent", "anthropic-prod", "claude-sonnet-4-5-20250929", 1_500, 6_000, 450, 0.55, 0.05, "staging"),
    Series("ticket-triage", "groq-prod", "openai/gpt-oss-120b", 60, 1_200, 80, 0.3),
    Series("ticket-router", "cerebras-prod", UNPRICED_MODEL, 40, 600, 5),
    Series(
        "conversation-summaries",
        "bedrock-us-east-1",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        20_000,
        3_000,
        250,
        0.4,
        0.05,
    ),
    # Search
    Series("query-rewrite", "cerebras-prod", "llama3.1-8b", 80, 300, 60),
    Series("answer-engine", "cerebras-prod", "qwen-3-32b", 60, 4_000, 300),
    Series("answer-engine", "openai-prod", "gpt-4.1-mini-2025-04-14", 50_000, 4_000, 300, 0.2),
    Series("index-enrichment", "openai-prod", "gpt-5-nano-2025-08-07", 150_000, 1_500, 200),
    Series("index-enrichment", "openai-prod", "text-embedding-3-small", 400_000, 800, 0),
    # Developer Productivity
    Series("code-review-bot", "anthropic-prod", "claude-sonnet-4-5-20250929", 3_000, 40_000, 1_500, 0.7, 0.1),
    Series("ide-assistant", "openai-prod", "gpt-5-mini-2025-08-07", 230_000, 3_000, 200, 0.5),
    Series("ide-assistant", "groq-prod", "openai/gpt-oss-120b", 80, 1_500, 40, 0.2),
    Series("ide-assistant", "openai-prod", "gpt-5-mini-2025-08-07", 6_000, 3_000, 200, 0.5, env="staging"),
    Series("test-generator", "moonshot-cn", "kimi-k2.6", 6_000, 8_000, 3_000, 0.3),
    # Sales Intelligence
    Series("lead-scoring", "openai-prod", "gpt-5-mini-2025-08-07", 40_000, 2_500, 150, 0.3),
    Series("lead-scoring", "bedrock-us-east-1", "anthropic.claude-haiku-4-5-20251001-v1:0", 10_000, 3_000, 300),
    Series("email-drafts", "anthropic-prod", "claude-sonnet-4-5-20250929", 6_000, 5_000, 600, 0.4, 0.05),
    # Through the company's LiteLLM gateway (timed): Kimi K2.6 at ~34 tokens/s misses the 8 s SLA (issue 12).
    Series("email-drafts", "moonshot-gateway", "kimi-k2.6", 60, 4_000, 500),
    Series(
        "call-notes",
        "bedrock-us-east-1",
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        2_500,
        12_000,
        800,
        0.3,
        0.05,
    ),
    # Data Platform
    Series("document-extraction", "bedrock-us-east-1", "us.amazon.nova-pro-v1:0", 30_000, 6_000, 500),
    Series("document-extraction", "openai-prod", "gpt-4.1-mini-2025-04-14", 10_000, 5_000, 400),
    Series("document-extraction", "bedrock-us-east-1", "us.amazon.nova-lite-v1:0", 60_000, 2_000, 150, env="staging"),
    Series("sql-copilot", "openai-prod", "gpt-5-2025-08-07", 18_000, 6_000, 900, 0.4),
    Series("column-classifier", "cerebras-prod", "gpt-oss-120b", 60, 1_000, 100),
    # Marketing Content
    Series("content-writer", "openai-prod", "gpt-5-2025-08-07", 4_000, 3_000, 2_000, 0.2),
    Series("content-writer", "moonshot-cn", "kimi-k2.5", 5_000, 3_000, 1_500, 0.2),
    Series("product-descriptions", "groq-prod", "openai/gpt-oss-20b", 40, 800, 300),
    Series("product-descriptions", "moonshot-cn", "kimi-k2.6", 8_000, 2_000, 800),
    # A developer's personal key with no project and no tags: no rule will match it.
    Series(None, "openai-prod", "gpt-5-mini-2025-08-07", 8_000, 4_000, 300, env="sandbox"),
    # Sales tries the same drafts on Cerebras (a comparable open model at ~1,000 tokens/s): well within the SLA.
    Series("email-drafts", "cerebras-prod", "gpt-oss-120b", 30, 4_000, 500),
)


def window(today: dt.date) -> tuple[dt.date, dt.date]:
    """The demo's first and last day (inclusive): WINDOW_DAYS days ending the day before `today`."""
    last = today - dt.timedelta(days=1)
    return last - dt.timedelta(days=WINDOW_DAYS - 1), last


def price_change_day(today: dt.date) -> dt.date:
    return window(today)[1] - dt.timedelta(days=PRICE_CHANGE_DAYS_BEFORE_END)


def _month_start(day: dt.date, months_back: int) -> dt.date:
    index = day.year * 12 + day.month - 1 - months_back
    return dt.date(index // 12, index % 12 + 1, 1)


def render_config(today: dt.date) -> str:
    """config.yaml with its dated placeholders filled in for the window ending before `today`."""
    last = window(today)[1]
    values = {"price_change_day": price_change_day(today).isoformat()}
    values |= {f"month_{n}": _month_start(last, n).isoformat() for n in range(6)}
    return string.Template(CONFIG_PATH.read_text()).substitute(values)


def _volume_factor(team: str | None, latency: str, index: int, day: dt.date, rng: random.Random) -> float:
    """Traffic multiplier of a series on day number `index` of the window: growth × week × campaign × noise."""
    growth = 1 + TEAM_GROWTH.get(team, 0.5) * index / (WINDOW_DAYS - 1)
    week = WEEKEND_FACTOR[latency] if day.weekday() >= 5 else 1.0
    ramp = 1.0
    ramp_start = WINDOW_DAYS - RAMP_DAYS
    if team == CAP_BREACHING_TEAM and index >= ramp_start:
        ramp = 1 + RAMP_EXTRA * (index - ramp_start + 1) / RAMP_DAYS
    return growth * week * ramp * rng.uniform(0.9, 1.1)


def _log_records(series: Series, latency: str, day: dt.date) -> int:
    """How many hours a gateway log draws for a day of `series` (its requests start in them): 12–24, more for
    busier streams.

    It follows the stream's base volume and the weekday, not the day's own volume (which depends on where the day
    falls in the window), so a day's log covers the same hours whichever window it is generated in, and loading
    the demo on a later day replaces every hour it had written for that day.
    """
    week = WEEKEND_FACTOR[latency] if day.weekday() >= 5 else 1.0
    return max(LOG_RECORDS[0], min(LOG_RECORDS[1], round(series.requests * week / REQUESTS_PER_LOG_HOUR_DRAW)))


def _usage(
    series: Series,
    stream: int,
    workload: dict,
    day: dt.date,
    factor: float,
    rng: random.Random,
    *,
    overrun: bool = False,
) -> DayUsage:
    requests = max(1, round(series.requests * factor))
    all_input = round(requests * series.input_per_request * rng.uniform(0.95, 1.05))
    cached = round(all_input * series.cached)
    cache_write = round(all_input * series.cache_write)
    output = round(requests * series.output_per_request * rng.uniform(0.93, 1.07))
    return DayUsage(
        day=day,
        stream=stream,
        series=series,
        team=workload["team"],
        latency_profile=workload["latency_profile"],
        requests=requests,
        log_records=_log_records(series, workload["latency_profile"], day),
        tokens=Tokens(all_input - cached - cache_write, cached, cache_write, output),
        batch_window_hours=workload.get("batch_window_hours"),
        overrun=overrun,
    )


def generate(*, today: dt.date, out_dir: Path, accounts: Collection[str] | None = None) -> dict[str, list[Path]]:
    """Write each demo account's export file(s) into `out_dir`; returns {account name: files, in import order}.

    With `accounts`, only those accounts' files, byte for byte what the whole generation writes for them (the
    draws every series makes are made either way; an export's own draws are seeded by its stream and day): the
    demo's restatement and the tests need one account's file, and writing all of them costs seconds."""
    config = yaml.safe_load(render_config(today))
    workloads = {w["slug"]: w for w in config["workloads"]}
    prices, fx = PriceList(config), FxRates(config)
    exports = {
        a["name"]: EXPORTS[a["connector"]](DemoAccount(a["name"], a["provider"], BILLING[a["provider"]], prices, fx))
        for a in config["accounts"]
        if accounts is None or a["name"] in accounts
    }
    first, _ = window(today)
    rng = random.Random(SEED)
    for index in range(WINDOW_DAYS):
        day = first + dt.timedelta(days=index)
        for stream, series in enumerate(SERIES):
            workload = workloads.get(series.workload, {"team": None, "latency_profile": "interactive"})
            factor = _volume_factor(workload["team"], workload["latency_profile"], index, day, rng)
            overrun = day.toordinal() % BATCH_OVERRUN_EVERY_DAYS == 0
            usage = _usage(series, stream, workload, day, factor, rng, overrun=overrun)
            if series.account in exports:
                exports[series.account].add(usage)
    out_dir.mkdir(parents=True, exist_ok=True)
    return {name: export.write(out_dir) for name, export in exports.items()}
