"""Seeded providers. Users add their own (an in-house GPU cluster, a new neocloud) in the admin or config."""

from finops.models import Provider

BUILTIN_PROVIDERS = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "cerebras": "Cerebras",
    "groq": "Groq",
    "moonshot": "Moonshot (Kimi)",
    "aws-bedrock": "AWS Bedrock",
    "azure-openai": "Azure OpenAI",
    "gcp-vertex": "GCP Vertex AI",
    "openrouter": "OpenRouter",
    "together": "Together AI",
    "fireworks": "Fireworks AI",
    "deepinfra": "DeepInfra",
}


def providers_seed(*, provider_model=Provider) -> None:
    """Idempotent; takes the model class so a data migration can pass its historical one."""
    for slug, name in BUILTIN_PROVIDERS.items():
        provider_model.objects.update_or_create(slug=slug, defaults={"name": name, "builtin": True})
