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
    # One read, then a write only for a provider missing or not as seeded (update_or_create was a locking read and
    # an UPDATE for each of the twelve, after every test that flushed the database): the same rows either way.
    stored = {provider.slug: provider for provider in provider_model.objects.filter(slug__in=BUILTIN_PROVIDERS)}
    for slug, name in BUILTIN_PROVIDERS.items():
        provider = stored.get(slug)
        if provider is None:
            provider_model.objects.create(slug=slug, name=name, builtin=True)
        elif (provider.name, provider.builtin) != (name, True):
            provider.name, provider.builtin = name, True
            provider.save(update_fields=["name", "builtin"])
