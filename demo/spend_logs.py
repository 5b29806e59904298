"""The gateway accounts' export: a CSV of LiteLLM's `LiteLLM_SpendLogs` table, one record per request
(demo/exports.py says what each export is; this is the one with per-request timing, failures and the slow tail)."""

import csv
import datetime as dt
import io
import itertools
import json
import operator
import random
from bisect import bisect
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

from finops.prices.selectors import Tokens, cost_from_price
from ingest.connectors.gateway.records import SPEND_LOG_COLUMNS as LITELLM_COLUMNS

from .exports import TOKEN_CLASSES, DayUsage, DemoAccount

# --- gateway_log: a LiteLLM_SpendLogs CSV export (ingest/connectors/gateway/log.py) ---

SPEND_LOG_COLUMNS = (*LITELLM_COLUMNS, "cache_hit")  # the demo's gateway answers from its cache too
LOG_SEED = "demo-litellm-spend-logs"
# How fast each provider serves (issue 12's story), as the market measures it: output tokens per second of
# generation (slowest, fastest, most common) and time to first token in ms (shortest, longest, most common).
# Cerebras (wafer-scale) and Groq (LPU) serve open models at hundreds to thousands of tokens per second; Moonshot's
# own API serves Kimi K2.6 at ~34 tokens per second, so a 500-token email draft takes ~15 s against an 8 s SLA.
SPEED = {"cerebras": (800, 1300, 1000), "groq": (300, 550, 420), "moonshot": (28, 44, 34)}
MODEL_SPEED = {"llama3.1-8b": (1600, 2400, 2000), "acme-support-router-ft-8b": (1600, 2400, 2000)}
DEFAULT_SPEED = (80, 200, 120)
TTFT_MS = {"cerebras": (100, 350, 180), "groq": (150, 450, 250), "moonshot": (700, 3000, 1200)}
DEFAULT_TTFT_MS = (200, 800, 400)
# The slow tail: a share of requests queue at peak and take `factor` times as long. Moonshot's is heavy (6 % at
# 1.5–3×, its p99 far above its median); the fast providers' is light (0.5 % at 1.2–1.6×).
TAIL = {"moonshot": (0.06, 1.5, 3.0)}
DEFAULT_TAIL = (0.005, 1.2, 1.6)
FAILURE_SHARE = 0.01  # LiteLLM `status: failure`: no tokens, an error after a short wait
# Request sizes are skewed like real traffic: most near the stream's usual size, a long tail of big prompts and
# long answers (log-normal, sigma below: the median request is the usual one, the mean a little above it).
INPUT_SIGMA, OUTPUT_SIGMA = 0.35, 0.5
# Batch workloads with a window (config.yaml batch_window_hours) start their jobs from 22:00 UTC through the
# window; on the day `DayUsage.overrun` marks, the run spills OVERRUN_HOURS past it (the demo's late night).
BATCH_START_HOUR = 22
OVERRUN_HOURS = 4
# Traffic by UTC hour: people work 08–22 UTC (Europe, then the US); batch jobs run at night.
DIURNAL = {
    "realtime": (1, 1, 1, 1, 1, 1, 2, 3, 6, 8, 10, 10, 10, 12, 14, 16, 16, 16, 14, 12, 8, 4, 2, 1),
    "batch": (10, 10, 10, 10, 10, 8, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8),
}
DIURNAL["interactive"] = DIURNAL["realtime"]
# What `rng.choices(range(24), weights=DIURNAL[profile])` works out on every call, worked out once: an hour is drawn
# as choices draws it (one random() against the cumulative weights), the same hours from the same seed.
DIURNAL_CUMULATIVE = {profile: list(itertools.accumulate(weights)) for profile, weights in DIURNAL.items()}
SPEND_QUANTUM = Decimal("0.00000001")
ZERO_SPEND = Decimal("0.0")
_BY_START_AND_ID = operator.itemgetter(0, 1)  # a record's (start, request id): the order the log is written in


def _cells(*values) -> str:
    """`values` as csv.writer writes them in a row (no line end): str() of each, None empty, quoted when needed (a
    row of one empty value alone would be `""`: every call here has a value that is not empty, or several)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values)
    return out.getvalue()


def _split(total: int, weights: list[int]) -> list[int]:
    """`total` in whole parts proportional to `weights` (integer arithmetic: exact, same on every platform)."""
    whole, done, seen, parts = sum(weights), 0, 0, []
    for weight in weights:
        seen += weight
        upto = total * seen // whole
        parts.append(upto - done)
        done = upto
    return parts


def _request_id(bits: int) -> str:
    """`str(uuid.UUID(int=bits, version=4))` without the UUID object (its constructor is Python, ~70k a demo): the
    variant and version bits set as UUID sets them, the same text."""
    bits = (bits & ~(0xC000 << 48) | 0x8000 << 48) & ~(0xF000 << 64) | 4 << 76
    hex = f"{bits:032x}"
    return f"{hex[:8]}-{hex[8:12]}-{hex[12:16]}-{hex[16:20]}-{hex[20:]}"


def _log_time(moment: dt.datetime) -> str:
    """How a LiteLLM_SpendLogs CSV export writes a time: naive UTC, milliseconds."""
    return moment.isoformat(sep=" ", timespec="milliseconds")


class _Request(NamedTuple):
    """A request as the log records it (a tuple: a frozen dataclass's constructor costs ~1 µs more, ~70k a demo)."""

    start: dt.datetime
    request_id: str  # a version-4 UUID's text (_request_id)
    tokens: Tokens
    duration_ms: int
    ttft_ms: int | None  # None: failed (no first token)
    failed: bool = False


class SpendLogs:
    def __init__(self, account: DemoAccount):
        self.account, self.records = account, []

    def _hour(self, usage: DayUsage, rng: random.Random, index: int) -> int:
        if usage.batch_window_hours:
            if usage.overrun and index >= usage.log_records - 3:  # the last jobs of the night start late
                return (BATCH_START_HOUR + usage.batch_window_hours + rng.randrange(OVERRUN_HOURS)) % 24
            return (BATCH_START_HOUR + rng.randrange(usage.batch_window_hours)) % 24
        cumulative = DIURNAL_CUMULATIVE[usage.latency_profile]
        return bisect(cumulative, rng.random() * (cumulative[-1] + 0.0), 0, 23)  # rng.choices(range(24), weights=…)

    def _starts(self, usage: DayUsage, rng: random.Random, count: int) -> list[dt.datetime]:
        """When each of the day's `count` requests started. The hours come from the day's first `log_records`
        draws (generate._log_records: they follow the stream's base volume and the weekday, not where the day
        falls in the window); every other request starts in one of those hours, so a day's log covers the same
        hours whichever window it is generated in, however many requests the day has there."""
        hours = [self._hour(usage, rng, index) for index in range(usage.log_records)]
        hours += [rng.choice(hours) for _ in range(count - len(hours))]
        midnight = dt.datetime.combine(usage.day, dt.time())
        return [midnight + dt.timedelta(hours=hour, milliseconds=rng.randrange(3_600_000)) for hour in hours]

    def _requests(self, usage: DayUsage, rng: random.Random) -> list[_Request]:
        """One record per request (as LiteLLM logs them), the day's tokens shared exactly among them in proportion
        to skewed sizes; each timed at the provider's market speed, with its slow tail."""
        series, provider = usage.series, self.account.provider
        count = max(usage.requests, usage.log_records)
        starts = self._starts(usage, rng, count)
        failed = [rng.random() < FAILURE_SHARE for _ in range(count)]
        input_weights = [0 if f else round(1000 * rng.lognormvariate(0, INPUT_SIGMA)) for f in failed]
        output_weights = [0 if f else max(1, round(1000 * rng.lognormvariate(0, OUTPUT_SIGMA))) for f in failed]
        if not any(output_weights):
            failed[0], input_weights[0], output_weights[0] = False, 1000, 1000  # a day has at least one answer
        shares = {
            name: _split(getattr(usage.tokens, name), output_weights if name == "output" else input_weights)
            for name in TOKEN_CLASSES
        }
        # The stream's timing, looked up once for its day's requests (the draws below are made in the same order).
        ttft_range = TTFT_MS.get(provider, DEFAULT_TTFT_MS)
        speed_range = MODEL_SPEED.get(series.model, SPEED.get(provider, DEFAULT_SPEED))
        share, low, high = TAIL.get(provider, DEFAULT_TAIL)
        requests = []
        each = zip(starts, failed, *(shares[name] for name in TOKEN_CLASSES), strict=True)
        for start, fails, *counts in each:
            request_id = _request_id(rng.getrandbits(128))
            tokens = Tokens(*counts)
            if fails:
                requests.append(_Request(start, request_id, tokens, rng.randint(100, 800), None, True))  # a 429 or 5xx
                continue
            ttft = rng.triangular(*ttft_range)
            speed = rng.triangular(*speed_range)
            slow = rng.uniform(low, high) if rng.random() < share else 1.0
            ttft, generation = round(ttft * slow), round(tokens.output * 1000 / speed * slow)
            requests.append(_Request(start, request_id, tokens, ttft + max(1, generation), ttft))
        return requests

    def add(self, usage: DayUsage) -> None:
        account, series = self.account, usage.series
        rng = random.Random(f"{LOG_SEED}:{usage.stream}:{usage.day.isoformat()}")
        price = account.prices.price_on(account.provider, series.model, usage.day)
        # The cells every record of the stream's day shares, written once as csv.writer writes them (a demo writes
        # ~200k records): model and provider; key, team and user; the request tags.
        model_provider = _cells(series.model, account.provider)
        who = _cells(usage.api_key, usage.team, "")  # a key alias: a raw `sk-` key would be stored as its hash
        tags = _cells(json.dumps([f"{key}:{value}" for key, value in usage.tags.items()]))
        for request in self._requests(usage, rng):
            tokens = request.tokens
            prompt = tokens.input + tokens.cached_input + tokens.cache_write  # LiteLLM: cache-inclusive
            # LiteLLM's own estimate from its price map; the product does not read it (it prices from the catalog).
            spend = cost_from_price(price, tokens).quantize(SPEND_QUANTUM) if price else ZERO_SPEND
            # LiteLLM keeps the provider's usage object in metadata; the cached tokens are read from it. The cell
            # holds quotes (and commas), so csv.writer quotes it and doubles its quotes: written so here.
            metadata = (
                f'"{{""usage_object"": {{""completion_tokens"": {tokens.output}, ""prompt_tokens"": {prompt}, '
                f'""total_tokens"": {prompt + tokens.output}, '
                f'""prompt_tokens_details"": {{""cached_tokens"": {tokens.cached_input}}}}}}}"'
            )
            start = request.start
            started = _log_time(start)
            ended = _log_time(start + dt.timedelta(milliseconds=request.duration_ms))
            first_token = (
                "" if request.ttft_ms is None else _log_time(start + dt.timedelta(milliseconds=request.ttft_ms))
            )
            status = "failure" if request.failed else "success"
            # A record is its CSV line, as csv.writer would write SPEND_LOG_COLUMNS' cells (cache_hit: LiteLLM
            # writes str(cache_hit)): written here rather than by csv.writer from a tuple of cells (the same bytes:
            # generate's tests compare the files; ~35 % less CPU for the demo's ~210k records).
            self.records.append(
                (
                    start,
                    request.request_id,
                    f"{request.request_id},{started},{ended},{first_token},{model_provider},{prompt},{tokens.output},"
                    f"{spend},{who},{metadata},{tags},{status},False\n",
                )
            )

    def write(self, out_dir: Path) -> list[Path]:
        self.records.sort(key=_BY_START_AND_ID)
        path = out_dir / f"{self.account.name}-spend-logs.csv"
        with path.open("w", newline="") as fh:
            fh.write(_cells(*SPEND_LOG_COLUMNS) + "\n")
            fh.writelines(line for _, _, line in self.records)
        return [path]


# The share of a proxy's requests it answers from its own cache (LiteLLM's response cache, on for repeated prompts).
CACHE_HIT_SHARE = 0.08


class ProxySpendLogs(SpendLogs):
    """A LiteLLM proxy's spend logs, with the responses it served from its own cache, as LiteLLM logs them
    (docs/litellm.md): `cache_hit` "True", spend 0, a request id ending `_cache_hit<time>`, the replayed
    response's tokens, its usage only in `metadata.additional_usage_values` (usage_object null), and a few ms.
    They come on top of the provider's usage, which they leave as it is: no provider served them."""

    def add(self, usage: DayUsage) -> None:
        super().add(usage)
        series, rng = usage.series, random.Random(f"{LOG_SEED}:cache:{usage.stream}:{usage.day.isoformat()}")
        midnight = dt.datetime.combine(usage.day, dt.time())
        for index in range(max(1, round(usage.log_records * CACHE_HIT_SHARE))):
            start = midnight + dt.timedelta(hours=self._hour(usage, rng, index), milliseconds=rng.randrange(3_600_000))
            prompt = round(series.input_per_request * rng.uniform(0.7, 1.3))
            output = max(1, round(series.output_per_request * rng.uniform(0.6, 1.4)))
            extra = {
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            }
            epoch = (start - dt.datetime(1970, 1, 1)).total_seconds()
            request_id = f"{_request_id(rng.getrandbits(128))}_cache_hit{epoch:.3f}"
            ended = _log_time(start + dt.timedelta(milliseconds=rng.randint(8, 40)))
            metadata = json.dumps({"usage_object": None, "additional_usage_values": extra})
            self.records.append(
                (
                    start,
                    request_id,
                    # completionStartTime empty, spend 0, user empty, cache_hit "True" (see SpendLogs.add).
                    f"{request_id},{_log_time(start)},{ended},,"
                    + _cells(series.model, self.account.provider, prompt, output, Decimal("0.0"), usage.api_key)
                    + ","
                    + _cells(
                        usage.team, "", metadata, json.dumps([f"{key}:{value}" for key, value in usage.tags.items()])
                    )
                    + ",success,True\n",
                )
            )
