"""The demo's quality scores and reported metrics (issue 12), posted through the same services as
`POST /api/v1/evals` and `POST /api/v1/metrics` (finops.performance.services.evals,
finops.performance.services.metrics).

Eval scores, this quarter and the last, tell "cheaper and still good enough":
- the support agent runs on Claude Sonnet 4.5 (resolution accuracy 0.93, from 0.92) and was evaluated on the
  cheaper Claude Haiku 4.5: 0.91, good enough to move the easy tickets;
- the code review bot's precision rose from 0.85 to 0.88 (a better prompt, same model);
- the email drafts and the content writer each split traffic between two providers (Kimi, the cheaper, scores a
  little lower on both); their quality is the request-weighted score of both models; ticket triage, the answer
  engine and the SQL copilot are scored on one model each.

A candidate model with no traffic (the support agent's Haiku) has a score but no weight once the workload's
requests are known (finops.performance.selectors.evals.quality_by); with none known, scores are averaged plainly, which
is why the support agent's requests are reported below.

Reported metrics, for workloads whose requests no gateway log this product reads covers (Anthropic and OpenAI,
called directly):
- the support agent's own tracing posts yesterday's hours as histograms of end-to-end latency and time to first
  token, with output tokens and generation time: measured and mergeable. Sonnet writes its ~450-token replies at
  ~80 tokens/s, so the p99 is over the agent's 8 s SLA (a few % of requests): with Haiku scoring 0.91 against
  0.93, the faster, cheaper model is the one to try;
- document extraction has only a dashboard's count and p50/p95/p99 per hour: posted as percentiles, so its
  performance shows "summary only", its p99 an upper bound rather than a measurement.

Deterministic for a given `today` (seeded per workload and hour), so loading the demo again changes nothing:
every row restates what is stored.
"""

import datetime as dt
import math
import random
from decimal import Decimal

from finops.performance.services.evals import evals_record
from finops.performance.services.metrics import metrics_record

SOURCE = "demo"
# (workload, provider, model, eval, score last quarter, score this quarter)
SCORES = (
    ("support-agent", "anthropic", "claude-sonnet-4-5", "resolution-accuracy", "0.92", "0.93"),
    ("support-agent", "anthropic", "claude-haiku-4-5", "resolution-accuracy", None, "0.91"),
    ("code-review-bot", "anthropic", "claude-sonnet-4-5", "review-precision", "0.85", "0.88"),
    ("ticket-triage", "groq", "gpt-oss-120b", "routing-accuracy", "0.94", "0.95"),
    ("answer-engine", "openai", "gpt-4.1-mini", "answer-faithfulness", "0.90", "0.89"),
    ("sql-copilot", "openai", "gpt-5", "query-correctness", "0.81", "0.84"),
    ("email-drafts", "anthropic", "claude-sonnet-4-5", "reply-acceptance", "0.90", "0.91"),
    ("email-drafts", "moonshot", "kimi-k2.6", "reply-acceptance", "0.84", "0.86"),
    ("content-writer", "openai", "gpt-5", "editor-approval", "0.87", "0.88"),
    ("content-writer", "moonshot", "kimi-k2.5", "editor-approval", "0.86", "0.85"),
)
MEASURED = ("support-agent", "anthropic", "claude-sonnet-4-5")  # histograms, from its own tracing
SUMMARISED = ("document-extraction", "openai", "gpt-4.1-mini")  # count + percentiles, from a dashboard
E2E_BOUNDS = (1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12000, 15000, 30000, 60000)
TTFT_BOUNDS = (250, 500, 750, 1000, 1500, 2000, 3000, 5000)
DIURNAL = (
    0.3,
    0.25,
    0.2,
    0.2,
    0.25,
    0.35,
    0.6,
    0.9,
    1.2,
    1.4,
    1.5,
    1.5,
    1.4,
    1.5,
    1.5,
    1.4,
    1.3,
    1.1,
    0.9,
    0.7,
    0.6,
    0.5,
    0.4,
    0.35,
)


def quarters(today: dt.date) -> tuple[str, str]:
    """The last quarter and this one, as the API names them ("2026Q3", "2026Q4")."""
    number = (today.month - 1) // 3 + 1
    previous = (today.year - 1, 4) if number == 1 else (today.year, number - 1)
    return f"{previous[0]}Q{previous[1]}", f"{today.year}Q{number}"


def eval_rows(today: dt.date) -> list[dict]:
    last, this = quarters(today)
    rows = []
    for workload, provider, model, name, before, now in SCORES:
        for period, value in ((last, before), (this, now)):
            if value is not None:
                rows.append(
                    {
                        "workload": workload,
                        "provider": provider,
                        "model": model,
                        "name": name,
                        "score": value,
                        "period": period,
                        "source": SOURCE,
                    }
                )
    return rows


def _histogram(values: list[float], bounds: tuple[int, ...]) -> dict:
    counts = [0] * len(bounds)
    for value in values:
        counts[next(i for i, bound in enumerate(bounds) if value <= bound or i == len(bounds) - 1)] += 1
    return {"histogram": [[bound, count] for bound, count in zip(bounds, counts)]}


def _measured_hour(hour: dt.datetime) -> dict:
    """An hour of the support agent as its tracing saw it: each request's time to first token and generation."""
    rng = random.Random(f"{MEASURED[0]}:{hour.isoformat()}")
    e2e, ttft, tokens, generating, errors = [], [], 0, Decimal(0), 0
    for _ in range(round(830 * DIURNAL[hour.hour])):
        first = rng.lognormvariate(math.log(800), 0.3)
        output = max(20, round(rng.gauss(450, 50)))
        seconds = output / max(40.0, rng.gauss(80, 6))
        e2e.append(min(first + seconds * 1000, E2E_BOUNDS[-1]))
        ttft.append(min(first, TTFT_BOUNDS[-1]))
        tokens += output
        generating += Decimal(f"{seconds:.3f}")
        errors += rng.random() < 0.004
    return {
        "workload": MEASURED[0],
        "provider": MEASURED[1],
        "model": MEASURED[2],
        "hour": hour.isoformat(),
        "source": SOURCE,
        "requests": len(e2e),
        "errors": errors,
        "latency": _histogram(e2e, E2E_BOUNDS),
        "ttft": _histogram(ttft, TTFT_BOUNDS),
        "output_tokens": tokens,
        "generation_seconds": str(generating),
    }


def _summarised_hour(hour: dt.datetime) -> dict:
    """An hour of document extraction as a dashboard shows it: a count and three percentiles."""
    rng = random.Random(f"{SUMMARISED[0]}:{hour.isoformat()}")
    requests = round(420 * DIURNAL[hour.hour])
    p50 = round(rng.uniform(5500, 6500))
    return {
        "workload": SUMMARISED[0],
        "provider": SUMMARISED[1],
        "model": SUMMARISED[2],
        "hour": hour.isoformat(),
        "source": SOURCE,
        "requests": requests,
        "errors": round(requests * rng.uniform(0.005, 0.015)),
        "latency": {
            "count": requests,
            "p50_ms": p50,
            "p95_ms": round(p50 * rng.uniform(2.1, 2.4)),
            "p99_ms": round(p50 * rng.uniform(3.2, 3.8)),
        },
    }


def metric_rows(today: dt.date) -> list[dict]:
    """Yesterday's 24 UTC hours of both workloads."""
    start = dt.datetime.combine(today - dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    hours = [start + dt.timedelta(hours=h) for h in range(24)]
    return [_measured_hour(h) for h in hours] + [_summarised_hour(h) for h in hours]


def evals_load(*, today: dt.date) -> dict:
    """Record the demo's eval scores and reported metrics (restating them on a second load); what was written."""
    scores = evals_record(by=None, rows=eval_rows(today))
    metrics = metrics_record(by=None, rows=metric_rows(today))
    return {"eval_scores": scores.as_dict(), "reported_metrics": metrics.as_dict()}
