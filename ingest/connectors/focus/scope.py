"""Which rows of a FOCUS file an account imports, and what it left out (docs/ingestion.md, "What a FOCUS import
keeps").

A cloud's FOCUS export holds every service of the cloud account: EC2, S3, VMs, storage, Savings Plans, tax.
An account of an AI provider imports only its LLM inference; every other row is left out, counted, and said so
on the run (rows and exact cost by service). The rule, decided once per distinct combination of the columns it
reads (a file repeats a few hundred), so both FOCUS readers filter in bulk:

1. The row's provider must be the account's. A cloud account (aws-bedrock, azure-openai, gcp-vertex) takes
   rows naming its cloud in `ServiceProviderName`, `HostProviderName`, `ProviderName` (FOCUS 1.0–1.2) or
   `InvoiceIssuerName` (a Marketplace model sold by Anthropic through AWS names AWS as host or issuer); any other
   account takes rows naming its own provider (slug or name) or naming none, rows of another known AI vendor
   (this product's own export names each line's provider: booked as that vendor, as the row says) and a cloud's
   rows under rule 3 (booked as that cloud). A provider the account cannot book (the Oracle rows of a multi-cloud
   export, Azure rows in an AWS file) is left out, never booked as the account's.
2. A service the account's settings exclude (`focus_services_exclude`, ServiceName, case-insensitive) is left out;
   one they include (`focus_services_include`) is kept, whatever the rules below say.
3. A cloud account keeps LLM inference: `ServiceSubcategory` "Generative AI" (FOCUS 1.2+); the cloud's own
   LLM services by name (AWS: `ServiceName` containing "Bedrock", `x_ServiceCode` AmazonBedrock, a Bedrock token
   usage type; Azure: "OpenAI" or "Foundry" in `ServiceName` or `x_SkuMeterSubcategory`; Google: "Vertex AI" or
   "Gemini" in `ServiceName`); and any `ServiceCategory` "AI and Machine Learning" row whose meter counts tokens.
   Everything else is left out: compute, storage, networking, other AI/ML services (SageMaker, Azure AI Search,
   Document AI …) unless included. An AI service's charges that are not tokens (provisioned throughput, PTU
   reservations, commitment purchases, its tax and credits) stay, under their charge categories.
   Any other account (a vendor's own FOCUS file, this product's export) keeps every row of its provider.
"""

import dataclasses
import functools
import re
from decimal import Decimal

from ingest.connectors.focus.meters import _VENDOR_SLUGS, PROVIDER_NAME_COLUMNS, _squash, _words, aws_usage_type

# The columns the rule reads, in the order `decide` takes them.
SCOPE_COLUMNS = (
    "ServiceCategory",
    "ServiceSubcategory",
    "ServiceName",
    "x_ServiceCode",
    "x_UsageType",
    "SkuMeter",
    "x_SkuMeterSubcategory",
    "ConsumedUnit",
    "PricingUnit",
    *PROVIDER_NAME_COLUMNS,
)
CLOUDS = {"aws-bedrock": "aws", "azure-openai": "azure", "gcp-vertex": "gcp"}
_CLOUD_WORDS = {"aws": {"aws", "amazon"}, "azure": {"microsoft", "azure"}, "gcp": {"google", "gcp"}}
_CLOUD_SERVICES = {
    "aws": re.compile(r"bedrock", re.I),
    "azure": re.compile(r"openai|foundry", re.I),
    "gcp": re.compile(r"vertex ai|gemini", re.I),
}
_NULLS = {"", "null", "NULL", "Null"}
NOT_INFERENCE, OTHER_PROVIDER, EXCLUDED = "not LLM inference", "another provider", "excluded by the account's settings"


@dataclasses.dataclass(frozen=True)
class Decision:
    kept: bool
    service: str = ""  # how the left-out summary names the row's service
    reason: str = ""


KEPT = Decision(True)


class Scope:
    """One account's rule (see the module docstring); `decide` is cached per distinct combination of cells."""

    def __init__(self, *, provider_slug: str, provider_name: str = "", include=(), exclude=()):
        self.cloud = CLOUDS.get(provider_slug)
        self.own_names = {_squash(provider_slug), _squash(provider_name)} - {""}
        self.provider_slug = provider_slug
        self.include = {name.strip().lower() for name in include if name.strip()}
        self.exclude = {name.strip().lower() for name in exclude if name.strip()}
        self.decide = functools.lru_cache(maxsize=8192)(self._decide)

    @classmethod
    def for_account(cls, account) -> "Scope":
        return cls(
            provider_slug=account.provider.slug,
            provider_name=account.provider.name,
            include=account.focus_services_include or (),
            exclude=account.focus_services_exclude or (),
        )

    def _decide(self, *cells: str) -> Decision:
        get = dict(zip(SCOPE_COLUMNS, ("" if cell.strip() in _NULLS else cell.strip() for cell in cells)))
        service = get["ServiceName"] or get["x_ServiceCode"] or "(no service)"
        names = [get[column] for column in PROVIDER_NAME_COLUMNS if get[column]]
        provider = self._provider_of(names)
        if provider is None or (self.cloud and provider != self.cloud):
            return Decision(False, f"{names[0]}: {service}", OTHER_PROVIDER)
        lowered = get["ServiceName"].lower()
        if lowered in self.exclude:
            return Decision(False, service, EXCLUDED)
        if lowered in self.include or provider not in _CLOUD_WORDS:
            return KEPT
        return KEPT if self._inference(get, provider) else Decision(False, service, NOT_INFERENCE)

    def _provider_of(self, names: list[str]) -> str | None:
        """ "own", a cloud ("aws", "azure", "gcp"), another known vendor's slug, or None: a provider this account
        cannot book (an unknown name, or for a cloud account anything but its cloud)."""
        if not names:
            return self.cloud or "own"  # nothing says otherwise: the account's
        words = _words(" ".join(names))
        clouds = [cloud for cloud, marks in _CLOUD_WORDS.items() if words & marks]
        if clouds:
            return self.cloud if self.cloud in clouds else clouds[0]
        for name in names:
            squashed = _squash(name)
            if squashed in self.own_names or _VENDOR_SLUGS.get(squashed) == self.provider_slug:
                return "own"
            if _VENDOR_SLUGS.get(squashed):  # another vendor's rows (this product's own export): booked as theirs
                return _VENDOR_SLUGS[squashed]
        return None

    @staticmethod
    def _inference(get: dict, cloud: str) -> bool:
        if get["ServiceSubcategory"].lower() == "generative ai":
            return True
        llm = _CLOUD_SERVICES[cloud]
        if llm.search(get["ServiceName"]) or (cloud == "azure" and llm.search(get["x_SkuMeterSubcategory"])):
            return True
        if cloud == "aws" and (
            get["x_ServiceCode"].lower() == "amazonbedrock"
            or aws_usage_type(get["x_UsageType"])
            or aws_usage_type(get["SkuMeter"])
        ):
            return True
        units = f"{get['ConsumedUnit']} {get['PricingUnit']}".lower()
        return get["ServiceCategory"].lower() == "ai and machine learning" and "token" in units and "hour" not in units


class LeftOut:
    """What an import left out: rows and exact cost by (service, reason, currency)."""

    def __init__(self):
        self.groups: dict[tuple[str, str, str], list] = {}

    def clear(self) -> None:
        self.groups.clear()

    def add(self, service: str, reason: str, currency: str, rows: int, cost: Decimal) -> None:
        group = self.groups.setdefault((service, reason, currency), [0, Decimal(0)])
        group[0] += rows
        group[1] += cost

    def as_json(self) -> dict:
        """What the run stores (IngestRun.left_out): groups by cost, largest first; amounts as exact text."""
        if not self.groups:
            return {}
        services = [
            {"service": service, "reason": reason, "currency": currency, "rows": rows, "cost": _exact(cost)}
            for (service, reason, currency), (rows, cost) in self.groups.items()
        ]
        services.sort(key=lambda entry: (-abs(Decimal(entry["cost"])), entry["service"], entry["currency"]))
        return {"rows": sum(entry["rows"] for entry in services), "services": services}


def _exact(amount: Decimal) -> str:
    """One text per value, whichever reader summed it (`18002.10` and `18002.100000` are both `18002.1`)."""
    return format(amount.normalize(), "f") if amount else "0"
