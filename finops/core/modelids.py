"""Normalised model ids, so the same model reads the same across providers and catalog entries.

`claude-sonnet-4-5-20250929`, `us.anthropic.claude-sonnet-4-5-20250929-v1:0` and
`anthropic/claude-sonnet-4-5` all become `claude-sonnet-4-5`; `groq/openai/gpt-oss-120b` becomes
`gpt-oss-120b`. The raw string is always kept beside it on the usage line.
"""

import re

# Bedrock cross-region / geo prefixes and vendor namespaces put in front of the model name.
_REGION_PREFIX = re.compile(r"^(us|eu|apac|ap|global|us-gov|jp|au|ca)\.")
_VENDOR_PREFIX = re.compile(r"^(anthropic|amazon|meta|mistral|cohere|ai21|openai|moonshotai|deepseek|qwen)\.")
# A release date or a Bedrock version at the end: -20250929, -2024-08-06, -v1:0, @20240620.
_DATE_SUFFIX = re.compile(r"([-@](20\d{2}-?\d{2}-?\d{2}))$")
_BEDROCK_VERSION = re.compile(r"-v\d+(:\d+)?$")  # only stripped from Bedrock-style ids (vendor-prefixed or `:N`)


def normalise_model(raw: str) -> str:
    model = raw.strip().lower()
    if "/" in model:
        # Routers and gateways namespace models (`groq/openai/gpt-oss-120b`, `accounts/fireworks/models/x`).
        model = model.rsplit("/", 1)[1]
    model = _REGION_PREFIX.sub("", model)
    bedrock_style = bool(_VENDOR_PREFIX.match(model)) or re.search(r"-v\d+:\d+$", model) is not None
    model = _VENDOR_PREFIX.sub("", model)
    if bedrock_style:
        # `-v1:0` is Bedrock's model version; elsewhere `-v7` is part of the name (a fine-tune's seventh version).
        model = _BEDROCK_VERSION.sub("", model)
    model = _DATE_SUFFIX.sub("", model)
    return model or raw.strip().lower()
