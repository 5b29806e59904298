"""Connector kind -> the one object that reads it (docs/architecture.md: one class per source kind behind a registry).

Every ConnectorKind has exactly one entry here (tests/ingest/test_registry.py checks it)."""

from ingest.connectors.anthropic.api import AnthropicApi
from ingest.connectors.focus.file import FocusFile
from ingest.connectors.gateway.log import GatewayLog
from ingest.connectors.litellm_api.api import LiteLLMApi
from ingest.connectors.openai.api import OpenAIApi
from ingest.connectors.openrouter.api import OpenRouterApi
from ingest.connectors.usage_csv.file import UsageCsv

from .base import ProviderError


class UnknownConnector(ProviderError, LookupError):
    """An account whose connector reads no files (or pulls no API): a run of it fails saying so."""


FILE_SOURCES = {source.kind: source for source in (UsageCsv(), FocusFile(), GatewayLog())}
API_SOURCES = {source.kind: source for source in (OpenAIApi(), AnthropicApi(), OpenRouterApi(), LiteLLMApi())}


def file_source_for(kind: str):
    """The reader of a file for an account of `kind`: its own, or for an API account whose exports backfill it
    (a LiteLLM proxy's exported spend logs), the reader of that export (finops.sources.models.BACKFILL_FILES)."""
    from finops.sources.models import BACKFILL_FILES

    kind = BACKFILL_FILES.get(kind, kind)
    try:
        return FILE_SOURCES[kind]
    except KeyError:
        raise UnknownConnector(
            f"connector {kind!r} does not read files (file connectors: {', '.join(FILE_SOURCES)})"
        ) from None


def api_source_for(kind: str):
    try:
        return API_SOURCES[kind]
    except KeyError:
        raise UnknownConnector(
            f"connector {kind!r} is not an API connector (API connectors: {', '.join(API_SOURCES)})"
        ) from None
