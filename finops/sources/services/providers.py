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
    """Idempotent; takes the model class so a data migration can pass its historical one.

    One read, then a write only for a provider missing or changed: it runs after every test that empties the
    database and again at the start of many, where an update_or_create per provider (a savepoint, a locking read
    and an UPDATE each, 12 times) was most of a reseed's queries."""
    existing = {provider.slug: provider for provider in provider_model.objects.filter(slug__in=BUILTIN_PROVIDERS)}
    for slug, name in BUILTIN_PROVIDERS.items():
        provider = existing.get(slug)
        if provider is None:
            provider_model.objects.create(slug=slug, name=name, builtin=True)
        elif provider.name != name or not provider.builtin:
            provider.name, provider.builtin = name, True
            provider.save(update_fields=["name", "builtin"])
