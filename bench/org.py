"""The bench organisation: teams, workloads, accounts over several providers, API keys, attribution rules, and
the usage series (API key × model) whose lines lines.py writes.

At full scale (10M lines): 50 teams, 400 workloads (8 a team), 2,000 API keys, 34 models (36 ids; gpt-oss-120b is one
model on three providers), 12 accounts over eight
providers, two of them gateway logs (Groq and Cerebras, hourly) whose lines carry measured latency (lines.py). Smaller
runs scale teams down with the square root of the line count (workloads and keys follow),
so a quick run keeps the same shape. Everything here goes through the ORM.

Attribution is realistic rather than one rule per key: OpenAI and Anthropic workloads own a project, Bedrock,
Azure and Vertex workloads are claimed by an `app` tag, OpenRouter and the gateways (keys only) by API key; shared keys
are
overridden by API-key rules of higher priority, one glob rule claims a batch account's embeddings and one a
user. Keys of sandbox projects (5 %) match no rule: unattributed. The generator gives each series the workload
the rules give it (`first_match`, the same semantics as finops.spend.services.attribution); the bench then checks
that the real service changes nothing.
"""

import fnmatch
import math
import random
from dataclasses import dataclass, field

from finops.core.modelids import normalise_model
from finops.models import Account, AttributionRule, Provider, Team, Workload

FULL_LINES = 10_000_000
PREFIX = "bench-"  # every account this bench creates; teams and workloads are the only ones in its database

# name, provider, granularity of its lines, how its usage is claimed, cost basis of its lines
ACCOUNTS = (
    ("bench-openai-prod", "openai", "hour", "project", "billed"),
    ("bench-openai-research", "openai", "hour", "project", "billed"),
    ("bench-openai-batch", "openai", "day", "project", "billed"),
    ("bench-anthropic-prod", "anthropic", "hour", "project", "billed"),
    ("bench-anthropic-labs", "anthropic", "hour", "project", "billed"),
    ("bench-bedrock-us", "aws-bedrock", "day", "tag", "billed"),
    ("bench-bedrock-eu", "aws-bedrock", "day", "tag", "billed"),
    ("bench-azure-openai", "azure-openai", "day", "tag", "estimated"),
    ("bench-vertex", "gcp-vertex", "day", "tag", "estimated"),
    ("bench-openrouter", "openrouter", "hour", "key", "billed"),
    # Gateway logs (issue 12): per-request timings on every line; the gateway's costs are catalog estimates.
    ("bench-groq-gateway", "groq", "hour", "key", "estimated"),
    ("bench-cerebras-gateway", "cerebras", "hour", "key", "estimated"),
)
GATEWAY_ACCOUNTS = {"bench-groq-gateway", "bench-cerebras-gateway"}
# Which account a workload lives in, by workload number mod 20: the project-claimed accounts carry most usage;
# two in twenty run on a gateway (10 and 11).
HOME_ACCOUNT = (0, 0, 10, 1, 1, 2, 3, 3, 3, 4, 5, 5, 6, 7, 7, 8, 9, 9, 11, 3)

# Raw model string as the provider sends it, then $ per M tokens: input, cached input, cache write, output.
# None: no price known (an Azure fine-tune): its lines are unpriced.
MODELS = {
    "openai": (
        ("gpt-5-2025-08-07", 1.25, 0.125, 0, 10),
        ("gpt-5-mini-2025-08-07", 0.25, 0.025, 0, 2),
        ("gpt-5-nano-2025-08-07", 0.05, 0.005, 0, 0.4),
        ("gpt-4.1-2025-04-14", 2, 0.5, 0, 8),
        ("gpt-4.1-mini-2025-04-14", 0.4, 0.1, 0, 1.6),
        ("gpt-4o-2024-11-20", 2.5, 1.25, 0, 10),
        ("gpt-4o-mini-2024-07-18", 0.15, 0.075, 0, 0.6),
        ("o3-2025-04-16", 2, 0.5, 0, 8),
        ("o4-mini-2025-04-16", 1.1, 0.275, 0, 4.4),
        ("text-embedding-3-large", 0.13, 0, 0, 0),
    ),
    "anthropic": (
        ("claude-opus-4-5-20251101", 5, 0.5, 6.25, 25),
        ("claude-sonnet-4-5-20250929", 3, 0.3, 3.75, 15),
        ("claude-haiku-4-5-20251001", 1, 0.1, 1.25, 5),
        ("claude-sonnet-4-20250514", 3, 0.3, 3.75, 15),
        ("claude-3-5-haiku-20241022", 0.8, 0.08, 1, 4),
    ),
    "aws-bedrock": (
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 3, 0.3, 3.75, 15),
        ("amazon.nova-pro-v1:0", 0.8, 0.2, 0, 3.2),
        ("amazon.nova-lite-v1:0", 0.06, 0.015, 0, 0.24),
        ("amazon.nova-micro-v1:0", 0.035, 0.00875, 0, 0.14),
        ("meta.llama4-maverick-17b-instruct-v1:0", 0.24, 0, 0, 0.97),
    ),
    "azure-openai": (
        ("gpt-4o-2024-11-20", 2.5, 1.25, 0, 10),
        ("gpt-4.1-2025-04-14", 2, 0.5, 0, 8),
        ("gpt-4.1-mini-2025-04-14", 0.4, 0.1, 0, 1.6),
        ("ft-gpt-4.1-mini-acme-support", None, None, None, None),
    ),
    "gcp-vertex": (
        ("gemini-2.5-pro", 1.25, 0.31, 0, 10),
        ("gemini-2.5-flash", 0.3, 0.075, 0, 2.5),
        ("gemini-2.5-flash-lite", 0.1, 0.025, 0, 0.4),
        ("gemini-2.0-flash-001", 0.1, 0.025, 0, 0.4),
    ),
    "openrouter": (
        ("deepseek/deepseek-v3.2", 0.28, 0.028, 0, 0.42),
        ("qwen/qwen3-coder", 0.22, 0, 0, 0.95),
        ("moonshotai/kimi-k2", 0.6, 0.15, 0, 2.5),
        ("z-ai/glm-4.6", 0.6, 0.11, 0, 2.2),
        ("mistralai/mistral-large", 2, 0, 0, 6),
        ("openai/gpt-oss-120b", 0.05, 0, 0, 0.25),
    ),
    "groq": (
        ("llama-3.3-70b-versatile", 0.59, 0, 0, 0.79),
        ("openai/gpt-oss-120b", 0.15, 0, 0, 0.75),
        ("qwen/qwen3-32b", 0.29, 0, 0, 0.59),
    ),
    "cerebras": (
        ("llama-3.3-70b", 0.85, 0, 0, 1.2),
        ("gpt-oss-120b", 0.35, 0, 0, 0.75),
        ("qwen-3-32b", 0.4, 0, 0, 0.8),
    ),
}
KINDS = ("agent", "rag", "summariser", "classifier", "copilot", "batch-eval", "extract", "translate")
AREAS = ("search", "support", "growth", "risk", "platform", "data", "sales", "legal", "billing", "mobile")
MODELS_PER_KEY = 3
ORPHAN_SHARE = 0.05  # keys of sandbox projects no rule claims
SHARED_KEY_EVERY = 23  # every 23rd key of a project account is used by the next workload: an API-key override


@dataclass(frozen=True)
class Scale:
    lines: int
    teams: int
    days: int = 365

    @classmethod
    def for_lines(cls, lines: int, days: int = 365) -> "Scale":
        teams = max(4, min(50, round(50 * math.sqrt(lines / FULL_LINES))))
        return cls(lines=lines, teams=teams, days=days)

    @property
    def workloads(self) -> int:
        return self.teams * len(KINDS)

    @property
    def keys(self) -> int:
        return self.workloads * 5


@dataclass
class Series:
    """One API key's use of one model: what every line of it shares."""

    account: Account
    granularity: str  # hour | day
    model: str
    model_raw: str
    project_ref: str
    api_key_ref: str
    user_ref: str
    tags: dict
    basis: str  # billed | estimated | unpriced
    prices: tuple  # pico-dollars per token: input, cached input, cache write, output (None: unpriced)
    volume: float  # median input tokens of an hourly line
    output_ratio: float
    cache_share: float
    workload: Workload | None = None
    team_id: int | None = None

    @property
    def timed(self) -> bool:
        """A gateway's series: its lines carry measured latency (lines.latency_pools)."""
        return self.account.name in GATEWAY_ACCOUNTS


@dataclass
class Org:
    scale: Scale
    teams: list[Team]
    workloads: list[Workload]
    accounts: list[Account]
    rules: list[AttributionRule]
    series: list[Series] = field(default_factory=list)


def _pico(dollars_per_m) -> int:
    """$ per million tokens -> pico-dollars per token, an exact integer (costs stay Decimal-exact)."""
    return round(dollars_per_m * 1_000_000)


def build_org(scale: Scale, *, seed: int = 7) -> Org:
    """Create the organisation (the caller has emptied the database of an earlier one) and its series."""
    rng = random.Random(seed)
    providers = {p.slug: p for p in Provider.objects.filter(slug__in={a[1] for a in ACCOUNTS})}
    accounts = [
        Account.objects.create(
            name=name, provider=providers[slug], connector="gateway_log" if name in GATEWAY_ACCOUNTS else "usage_csv"
        )
        for name, slug, *_ in ACCOUNTS
    ]
    teams = Team.objects.bulk_create(
        [
            Team(
                name=f"{AREAS[t % len(AREAS)].title()} {t // len(AREAS) + 1}",
                slug=f"{AREAS[t % len(AREAS)]}-{t // len(AREAS) + 1}",
                cost_center=f"CC-{400 + t}",
            )
            for t in range(scale.teams)
        ]
    )
    workloads = Workload.objects.bulk_create(
        [
            Workload(
                team=teams[w // len(KINDS)],
                name=f"{teams[w // len(KINDS)].name} {KINDS[w % len(KINDS)]}",
                slug=f"{teams[w // len(KINDS)].slug}-{KINDS[w % len(KINDS)]}",
                latency_profile=("realtime", "interactive", "batch")[w % 3],
                sla_seconds=(2, 10, None)[w % 3],
                batch_window_hours=(None, None, 8)[w % 3],
            )
            for w in range(scale.workloads)
        ]
    )
    rules = AttributionRule.objects.bulk_create(_rules(scale, accounts, providers, workloads))
    rules = list(AttributionRule.objects.select_related("workload").order_by("priority", "id"))
    org = Org(scale=scale, teams=teams, workloads=workloads, accounts=accounts, rules=rules)
    org.series = _series(scale, accounts, workloads, rules, rng)
    return org


def _home(w: int) -> int:
    return HOME_ACCOUNT[w % len(HOME_ACCOUNT)]


def _key_owner(k: int, scale: Scale) -> int | None:
    """The workload number whose key k is, or None for a sandbox key."""
    return None if k >= scale.keys * (1 - ORPHAN_SHARE) else k % scale.workloads


def _rules(scale: Scale, accounts, providers, workloads) -> list[AttributionRule]:
    rules = []
    for w, workload in enumerate(workloads):
        account = accounts[_home(w)]
        kind = ACCOUNTS[_home(w)][3]
        if kind == "project":
            rules.append(
                AttributionRule(workload=workload, priority=100, account=account, project=f"proj_{workload.slug}")
            )
        elif kind == "tag":
            rules.append(
                AttributionRule(workload=workload, priority=100, provider=account.provider, tags={"app": workload.slug})
            )
    for k in range(scale.keys):
        w = _key_owner(k, scale)
        if w is None:
            continue
        kind = ACCOUNTS[_home(w)][3]
        if kind == "key":
            rules.append(AttributionRule(workload=workloads[w], priority=100, api_key=f"key_{k:04d}"))
        elif kind == "project" and k % SHARED_KEY_EVERY == 5:
            rules.append(
                AttributionRule(workload=workloads[(w + 1) % len(workloads)], priority=10, api_key=f"key_{k:04d}")
            )
    batch = accounts[2]
    rules.append(AttributionRule(workload=workloads[0], priority=50, account=batch, model="text-embedding-*"))
    rules.append(AttributionRule(workload=workloads[3], priority=20, provider=providers["openai"], user="user_007"))
    return rules


def _series(scale: Scale, accounts, workloads, rules, rng: random.Random) -> list[Series]:
    workload_weight = [rng.lognormvariate(0, 1.2) for _ in workloads]  # a few workloads make most of the spend
    series = []
    for k in range(scale.keys):
        w = _key_owner(k, scale)
        a = _home(w) if w is not None else k % len(accounts)
        _, provider_slug, granularity, kind, basis = ACCOUNTS[a]
        models = MODELS[provider_slug]
        slug = workloads[w].slug if w is not None else None
        project = "" if kind != "project" else f"proj_{slug}" if slug else f"proj_sandbox_{k % 7}"
        tags = {} if kind != "tag" else {"app": slug, "env": "prod"} if slug else {"env": "dev"}
        user = f"user_{k % 500:03d}" if kind == "project" and k % 3 == 0 else ""
        weight = workload_weight[w] if w is not None else 0.3
        for j in range(MODELS_PER_KEY):
            raw, *prices = models[(k + j) % len(models)]
            priced = prices[0] is not None
            item = Series(
                account=accounts[a],
                granularity=granularity,
                model=normalise_model(raw),
                model_raw=raw,
                project_ref=project,
                api_key_ref=f"key_{k:04d}",
                user_ref=user,
                tags=tags,
                basis=basis if priced else "unpriced",
                prices=tuple(_pico(p) for p in prices) if priced else None,
                volume=weight * rng.lognormvariate(math.log(3000), 1.0) / (j + 1),
                output_ratio=rng.uniform(0.05, 0.35),
                cache_share=rng.uniform(0, 0.6) if prices[1] else 0.0,
            )
            item.workload = first_match(item, rules)
            item.team_id = item.workload.team_id if item.workload else None
            series.append(item)
    return series


def first_match(series: Series, rules: list[AttributionRule]) -> Workload | None:
    """The rules in priority order, evaluated in Python with the service's semantics (a bench-side oracle)."""
    for rule in rules:
        if rule.account_id and rule.account_id != series.account.id:
            continue
        if rule.provider_id and rule.provider_id != series.account.provider_id:
            continue
        if (rule.project and rule.project != series.project_ref) or (
            rule.api_key and rule.api_key != series.api_key_ref
        ):
            continue
        if rule.user and rule.user != series.user_ref:
            continue
        if rule.model and not (
            fnmatch.fnmatchcase(series.model, rule.model.lower())
            or fnmatch.fnmatchcase(series.model_raw.lower(), rule.model.lower())
        ):
            continue
        if any(series.tags.get(key) != str(value) for key, value in rule.tags.items()):
            continue
        return rule.workload
    return None
