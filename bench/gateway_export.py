"""A generated LiteLLM_SpendLogs CSV export (the bench's and tests' gateway log), written streamed.

One day of a busy gateway, however many requests: 40 virtual keys (each in a team, some with an alias, a few logged
as raw `sk-` keys, which the reader hashes), each calling two of eight models on four providers, with two sets of
request tags (so up to 160 lines an hour, 3,840 a day) and cached input in LiteLLM's `usage_object`. Streamed and
non-streamed calls (completionStartTime before or equal to
endTime), 1 % failures with no tokens, some records with no end time (counted, not timed) or no first-token time,
and requests crossing midnight into the next day. The span is fixed, so a bigger file is a busier day: the hourly
groups are the same for 1M and 5M requests and memory can be compared between sizes.

`varied=True` (the tests) adds the rarer shapes: empty metadata, users, team aliases from metadata, zero-length
calls, first tokens outside [start, end] (clamped), time zones written as `Z` / `+00:00` / `T`.
"""

import csv
import datetime as dt
import math
import random
from pathlib import Path

from ingest.connectors.gateway.records import SPEND_LOG_COLUMNS

MODELS = (
    ("llama-3.3-70b-versatile", "groq"),
    ("llama-3.1-8b-instant", "groq"),
    ("llama3.1-8b", "cerebras"),
    ("qwen-3-235b", "cerebras"),
    ("kimi-k2-0905-preview", "moonshot"),
    ("gpt-4.1-mini", "openai"),
    ("gpt-4o", "openai"),
    ("groq/openai/gpt-oss-120b", ""),
)
TEAMS = ("search", "support", "growth", "platform", "research")
DAY = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
KEYS = 40
SPAN_S = 24 * 3600


def _keys(rng: random.Random) -> list[tuple]:
    keys = []
    for i in range(KEYS):
        raw = f"sk-bench-{i:04d}-{rng.getrandbits(32):08x}" if i % 20 == 7 else f"{rng.getrandbits(256):064x}"
        models = rng.sample(range(len(MODELS)), 2)
        keys.append((raw, TEAMS[i % len(TEAMS)], f"key-{i}" if i % 3 == 0 else "", models))
    return keys


DATES = tuple((DAY + dt.timedelta(days=d)).date().isoformat() for d in range(3))


def _time(micros: int, style: int) -> str:
    """`micros` after DAY as LiteLLM's export writes it (naive UTC, ms), or (varied) with `T`, µs and `Z`, or
    whole seconds and `+00:00`."""
    seconds, fraction = divmod(micros, 1_000_000)
    day, seconds = divmod(seconds, 86400)
    hour, seconds = divmod(seconds, 3600)
    clock = f"{hour:02d}:{seconds // 60:02d}:{seconds % 60:02d}"
    if style == 0:
        return f"{DATES[day]} {clock}.{fraction // 1000:03d}"
    if style == 1:
        return f"{DATES[day]}T{clock}.{fraction:06d}Z"
    return f"{DATES[day]}T{clock}+00:00"


def spend_log_rows(requests: int, *, seed: int, varied: bool = False):
    """The export's records as lists of cells, in startTime order."""
    rng = random.Random(seed)
    keys = _keys(rng)
    tag_sets = ('["prod"]', '["prod", "jobID:nightly"]', "[]") if varied else ('["prod"]', '["prod", "jobID:nightly"]')
    step = SPAN_S * 1_000_000 // max(requests, 1)
    for n in range(requests):
        key, team, alias, models = keys[rng.randrange(len(keys))]
        model, provider = MODELS[models[rng.random() < 0.3]]
        start = n * step + rng.randrange(step) if step else n
        if n >= requests - max(1, requests // 500):  # the last requests of the day end after midnight
            start = SPAN_S * 1_000_000 - rng.randrange(1, 2_000_000)
        failed = rng.random() < 0.01
        prompt = 0 if failed else rng.randrange(20, 6000)
        cached = 0 if failed or rng.random() < 0.6 else rng.randrange(0, prompt + 1)
        output = 0 if failed else rng.randrange(1, 1500)
        ttft_us = rng.randrange(80_000, 900_000)
        duration_us = ttft_us + (0 if failed else output * rng.randrange(500, 5000))
        streamed = rng.random() < 0.7
        style = rng.randrange(3) if varied else 0
        end = "" if rng.random() < 0.02 else _time(start + duration_us, style)
        first = _time(start + ttft_us, style) if streamed else (end if rng.random() < 0.8 else "")
        metadata = (
            (
                f'{{"user_api_key_alias": "{alias}", "user_api_key_team_id": "{team}", '
                f'"usage_object": {{"prompt_tokens": {prompt}, "completion_tokens": {output}, '
                f'"prompt_tokens_details": {{"cached_tokens": {cached}}}}}}}'
            )
            if alias
            else f'{{"usage_object": {{"prompt_tokens_details": {{"cached_tokens": {cached}}}}}}}'
        )
        user = ""
        if varied:
            pick = rng.random()
            if pick < 0.05:
                metadata = "" if prompt == 0 or cached == 0 else metadata
            elif pick < 0.10:
                metadata = f'{{"user_api_key_team_alias": "{team}-alias", "status": "success", "usage_object": null}}'
                cached = 0
            elif pick < 0.12:
                end = first = _time(start, style)  # a zero-length call
            elif pick < 0.14 and end:
                first = _time(start + duration_us + 5_000, style)  # a first token after the end: clamped
            user = f"user-{rng.randrange(4)}" if rng.random() < 0.3 else ""
        yield [
            f"req-{n}",
            _time(start, style),
            end,
            first,
            model,
            provider,
            prompt,
            output,
            f"{(prompt + output) * 0.0000002:.8f}",
            key,
            team,
            user,
            metadata,
            tag_sets[rng.randrange(len(tag_sets))],
            "failure" if failed else "success",
        ]


# Issue 23's shapes of a real deployment, over 23 days: "scattered" (300 keys, 50 internal users, 7 teams, drawn
# independently for each request, so requests rarely share an hourly line) and "proxy" (each key one user, one
# team and one model, all busy every hour: ~6 requests a line at 1M requests).
SHAPE_KEYS, SHAPE_USERS, SHAPE_TEAMS, SHAPE_DAYS = (
    300,
    50,
    ("search", "support", "growth", "platform", "research", "legal", "finance"),
    23,
)


def shaped_rows(requests: int, *, seed: int, shape: str):
    """The records of a "scattered" or "proxy" log, in startTime order; latencies log-uniform from 0.2 s to 60 s."""
    rng = random.Random(seed)
    keys = [f"{rng.getrandbits(256):064x}" for _ in range(SHAPE_KEYS)]
    owners = [
        (
            f"user-{rng.randrange(SHAPE_USERS):02d}",
            SHAPE_TEAMS[rng.randrange(len(SHAPE_TEAMS))],
            rng.randrange(len(MODELS)),
        )
        for _ in keys
    ]
    span_us = SHAPE_DAYS * SPAN_S * 1_000_000
    step = span_us // max(requests, 1)
    dates = [(DAY + dt.timedelta(days=d)).date().isoformat() for d in range(SHAPE_DAYS + 1)]
    low, high = math.log(200_000), math.log(60_000_000)
    for n in range(requests):
        k = rng.randrange(SHAPE_KEYS)
        if shape == "proxy":
            user, team, m = owners[k]
        else:
            user, team, m = (
                f"user-{rng.randrange(SHAPE_USERS):02d}",
                SHAPE_TEAMS[rng.randrange(7)],
                rng.randrange(len(MODELS)),
            )
        model, provider = MODELS[m]
        start = n * step + rng.randrange(step) if step else n
        failed = rng.random() < 0.01
        prompt, output = (0, 0) if failed else (rng.randrange(20, 6000), rng.randrange(1, 1500))
        cached = 0 if failed or rng.random() < 0.6 else rng.randrange(0, prompt + 1)
        duration_us = int(math.exp(rng.uniform(low, high)))
        ttft_us = int(duration_us * rng.uniform(0.05, 0.5))
        end, first = (_shape_time(dates, start + d) for d in (duration_us, ttft_us))
        metadata = (
            f'{{"user_api_key_alias": "key-{k}", "user_api_key_team_id": "{team}", '
            f'"usage_object": {{"prompt_tokens": {prompt}, "completion_tokens": {output}, '
            f'"prompt_tokens_details": {{"cached_tokens": {cached}}}}}}}'
        )
        yield [
            f"req-{n}",
            _shape_time(dates, start),
            end,
            first if rng.random() < 0.7 else end,
            model,
            provider,
            prompt,
            output,
            f"{(prompt + output) * 0.0000002:.8f}",
            keys[k],
            team,
            user,
            metadata,
            '["prod"]',
            "failure" if failed else "success",
        ]


def _shape_time(dates: list[str], micros: int) -> str:
    seconds, fraction = divmod(micros, 1_000_000)
    day, seconds = divmod(seconds, 86400)
    hour, seconds = divmod(seconds, 3600)
    return f"{dates[day]} {hour:02d}:{seconds // 60:02d}:{seconds % 60:02d}.{fraction // 1000:03d}"


def write_spend_logs_csv(
    path: Path, requests: int, *, seed: int = 20260302, varied: bool = False, shape: str = "busy-day"
) -> int:
    """Write the export (`shape`: "busy-day", today's bench file, or "scattered" / "proxy"); returns its size."""
    rows = (
        spend_log_rows(requests, seed=seed, varied=varied)
        if shape == "busy-day"
        else shaped_rows(requests, seed=seed, shape=shape)
    )
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(SPEND_LOG_COLUMNS)
        writer.writerows(rows)
    return path.stat().st_size
