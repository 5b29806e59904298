"""A routing policy as a LiteLLM router config snippet (issue 13), so the routing decision lives in config.

LiteLLM's proxy config (docs.litellm.ai/docs/proxy/reliability): `model_list` entries name a model group
(`model_name`) and the deployment behind it (`litellm_params.model` = "<provider prefix>/<model>", keys read with
"os.environ/NAME"); `router_settings.fallbacks` maps a group to the groups tried when it fails. Each workload is
one group named after its slug, its fallbacks groups "<slug>-fallback", "<slug>-fallback-2" … in the order given
(the comparison's, issue 28). Pure: policies in, YAML out.
"""

import yaml

# This product's provider slugs → LiteLLM's provider prefixes.
LITELLM_PREFIX = {
    "openai": "openai",
    "anthropic": "anthropic",
    "aws-bedrock": "bedrock",
    "azure-openai": "azure",
    "gcp-vertex": "vertex_ai",
    "groq": "groq",
    "cerebras": "cerebras",
    "moonshot": "moonshot",
    "together": "together_ai",
    "fireworks": "fireworks_ai",
    "deepinfra": "deepinfra",
    "openrouter": "openrouter",
}


def _deployment(group: str, provider: str, model: str) -> dict:
    prefix = LITELLM_PREFIX.get(provider, provider)
    key = provider.upper().replace("-", "_") + "_API_KEY"
    return {"model_name": group, "litellm_params": {"model": f"{prefix}/{model}", "api_key": f"os.environ/{key}"}}


def litellm_router_config(policies: list[dict]) -> str:
    """policies: [{workload, primary: (provider, model), fallbacks: [(provider, model)] in order, constraint}]
    (a single `fallback` is read too)."""
    model_list, fallbacks = [], []
    for policy in policies:
        group = policy["workload"]
        model_list.append(_deployment(group, *policy["primary"]))
        chain = policy.get("fallbacks") or ([policy["fallback"]] if policy.get("fallback") else [])
        names = []
        for index, pair in enumerate(chain, start=1):
            name = f"{group}-fallback" + (f"-{index}" if index > 1 else "")
            model_list.append(_deployment(name, *pair))
            names.append(name)
        if names:
            fallbacks.append({group: names})
    document = {"model_list": model_list}
    if fallbacks:
        document["router_settings"] = {"fallbacks": fallbacks}
    return yaml.safe_dump(document, sort_keys=False, width=120)
