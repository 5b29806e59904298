"""The bench's per-resource FOCUS export: a daily row per Bedrock application inference profile and meter, as a
cloud account's "FOCUS 1.2 with AWS columns" export has them (issue 23).

Unlike focus_export.write_focus_csv (a few hundred series repeated hourly, so a file reveals its tag sets and
line signatures once), every row here names its resource: 5,000 application inference profiles (more when the
file needs them) in 6 regions and 40 sub-accounts, each wrapping one model and tier, tags on every row (team, app,
env, cost centre, owner), ~830 SKUs across Bedrock, its mantle models and a Marketplace edition. A profile's
daily rows are one per token direction it used, so the file holds tens of thousands of distinct tag sets and
signatures (the reader adds `resource` and `meter` to the tags). Same header and meter cells as the hourly file
(checked against the focus-data-toolkit AWS generator's columns and the AWS FOCUS 1.2 export), streamed.
"""

import datetime as dt
import json
import math
import os
import random
from pathlib import Path

from .focus_export import APPS, COL, COST_CELLS, HEADER, OPERATIONS, PAYER, QUANTITY_CELLS, TEAMS, _csv, _meters

REGIONS6 = (
    ("USE1", "us-east-1", "US East (N. Virginia)"),
    ("USW2", "us-west-2", "US West (Oregon)"),
    ("EUC1", "eu-central-1", "EU (Frankfurt)"),
    ("EUW1", "eu-west-1", "EU (Ireland)"),
    ("APN1", "ap-northeast-1", "Asia Pacific (Tokyo)"),
    ("APS2", "ap-southeast-2", "Asia Pacific (Sydney)"),
)
DAYS = 30
FIRST_DAY = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
ACCOUNTS = 40
DIRECTION_PARTS = (
    "-input-tokens",
    "-output-tokens",
    "-cache-read-input-token-count",
    "-cache-write-input-token-count",
    "_InputTokenCount",
    "_OutputTokenCount",
    "_CacheReadInputTokenCount",
)


def _meter_groups() -> list[list[tuple]]:
    """The meters grouped by what one profile can use: a model and tier in a region, every token direction."""
    groups: dict[str, list[tuple]] = {}
    for meter in _meters(REGIONS6):
        usage_type = meter[0][COL["SkuMeter"]]
        key = usage_type
        for part in DIRECTION_PARTS:
            key = key.replace(part, "")
        groups.setdefault(key, []).append(meter)
    return list(groups.values())


def write_resource_focus_csv(path: Path, rows: int, *, seed: int = 20260303, profiles: int = 5000) -> int:
    """Write `rows` daily per-resource rows (30 days) to `path`, streaming; returns the bytes written.

    A series is one profile's meter; a day holds rows/30 of them, drawn from the whole population, so most series
    recur on some days and not others, as real usage does. Profiles are added when the file needs more series.
    """
    rng = random.Random(seed)
    groups = _meter_groups()
    per_day = math.ceil(rows / DAYS)
    profiles = max(profiles, math.ceil(per_day / 2))  # at ~3 meters a profile, two thirds of the series a day at most
    series = []  # (profile index, meter)
    profile_cells = []
    for p in range(profiles):
        group = groups[rng.randrange(len(groups))]
        cells = group[0][0]
        region, account = cells[COL["RegionId"]], f"{210000000000 + (p % ACCOUNTS) * 7919:012d}"
        team, app, env = TEAMS[p % len(TEAMS)], APPS[rng.randrange(len(APPS))], ("prod", "staging", "dev")[p % 3]
        tags = {
            "user:team": team,
            "user:app": app,
            "user:env": env,
            "user:cost-center": f"CC-{400 + p % 97}",
            "user:owner": f"owner-{rng.randrange(400):03d}",
        }
        profile_id = f"{rng.getrandbits(48):012x}"
        profile_cells.append(
            (
                f"arn:aws:bedrock:{region}:{account}:application-inference-profile/{profile_id}",
                f"{team}-{app}-{env}-{p:05d}",
                account,
                f"{team}-{env}-{p % ACCOUNTS:03d}",
                _csv(json.dumps(tags, separators=(",", ":"))),
                OPERATIONS[p % len(OPERATIONS)],
            )
        )
        series.extend((p, meter) for meter in group)
    if per_day > len(series):
        raise ValueError(f"{rows} rows need more series than {profiles} profiles have ({len(series)})")
    log, lognormal = math.log, rng.lognormvariate
    with open(path, "w", encoding="utf-8", newline="", buffering=1 << 20) as out:
        out.write(",".join(HEADER) + "\n")
        for day in range(DAYS):
            start = FIRST_DAY + dt.timedelta(days=day)
            start_text, end_text = (
                moment.strftime("%Y-%m-%dT00:00:00.000Z") for moment in (start, start + dt.timedelta(days=1))
            )
            count = rows * (day + 1) // DAYS - rows * day // DAYS
            batch = []
            for k in sorted(rng.sample(range(len(series)), count)):
                p, (meter_cells, price, per_quantity, median) = series[k]
                resource_id, name, account, account_name, tags, operation = profile_cells[p]
                cells = list(meter_cells)
                thousands = max(0.001, round(lognormal(log(median * 24), 1.3), 3))  # a day of the profile's tokens
                quantity = repr(thousands) if per_quantity == 1000 else str(max(1, int(thousands * 1000)))
                cost = repr(round(float(quantity) * price, 10))
                for i in COST_CELLS:
                    cells[i] = cost
                for i in QUANTITY_CELLS:
                    cells[i] = quantity
                cells[COL["ChargePeriodStart"]], cells[COL["ChargePeriodEnd"]] = start_text, end_text
                cells[COL["ResourceId"]], cells[COL["ResourceName"]] = resource_id, name
                cells[COL["ResourceType"]] = "Application Inference Profile"
                cells[COL["SubAccountId"]], cells[COL["SubAccountName"]], cells[COL["Tags"]] = (
                    account,
                    account_name,
                    tags,
                )
                cells[COL["x_Operation"]] = operation
                cells[COL["BillingAccountId"]] = PAYER
                batch.append(",".join(cells))
                if len(batch) == 10_000:
                    out.write("\n".join(batch) + "\n")
                    batch = []
            if batch:
                out.write("\n".join(batch) + "\n")
    return os.path.getsize(path)
