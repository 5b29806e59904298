"""Which model family a usage line's model belongs to (issue 13): the same weights under each provider's name.

`meta.llama3-3-70b-instruct-v1:0` (Bedrock), `llama-3.3-70b` (Groq), `llama3.3-70b` (Cerebras) and
`meta-llama/Llama-3.3-70B-Instruct-Turbo` (Together) are one family, `llama-3.3-70b`.

Lookup, first match wins (`FamilyMap.family_of`):
1. a ModelFamily's aliases (config `families:`): what the platform team says;
2. an offering's model (config `offerings:`): an offering names its family;
3. the canonical form of the normalised id (`canonical_family`): the catalog's own ids reduced to the weights'
   name (vendor, version and serving suffixes dropped, Llama's version spellings unified).
Pure: the caller loads the aliases (finops.whatif.selectors.offerings.family_map).
"""

import re

from finops.core.modelids import normalise_model

# Serving / packaging suffixes that do not change the weights.
_SUFFIXES = re.compile(r"(-(instruct|turbo|versatile|chat|fp8|fp16|bf16|preview|latest|\d{4}))+$")
# Llama version spellings: llama3-3, llama3.3, llama-v3p3, llama-3.3 → llama-3.3
_LLAMA = re.compile(r"^llama-?v?(\d+)(?:[.p-](\d+))?(?=-|$)")


def canonical_family(model: str) -> str:
    """`llama3-3-70b-instruct` → `llama-3.3-70b`; `kimi-k2.6` → `kimi-k2.6`; ids are normalised first."""
    name = normalise_model(model)
    name = _LLAMA.sub(lambda m: f"llama-{m.group(1)}" + (f".{m.group(2)}" if m.group(2) else ""), name)
    return _SUFFIXES.sub("", name) or name


class FamilyMap:
    def __init__(self, aliases: dict[str, str] | None = None):
        self._aliases = {normalise_model(model): family for model, family in (aliases or {}).items()}

    def family_of(self, model: str) -> str:
        normalised = normalise_model(model)
        return self._aliases.get(normalised) or canonical_family(normalised)


# A family's line (issue 28): the models one vendor sells under one name, so "smaller or newer models of the same
# family" (Claude Haiku or Sonnet 4.6 beside Sonnet 4.5, GPT-5 mini beside GPT-5) come before other families.
# First matching prefix wins (gpt-oss before gpt: open weights are another line).
_LINES = (
    ("gpt-oss", "gpt-oss"),
    ("claude", "claude"),
    ("gpt", "gpt"),
    ("o3", "gpt"),
    ("o4", "gpt"),
    ("gemini", "gemini"),
    ("nova", "nova"),
    ("llama", "llama"),
    ("deepseek", "deepseek"),
    ("kimi", "kimi"),
    ("moonshot", "kimi"),
    ("qwen", "qwen"),
    ("mistral", "mistral"),
)


def lineage(family: str) -> str:
    """`claude-sonnet-4-5` → `claude`; `gpt-5-mini` → `gpt`; `gpt-oss-120b` → `gpt-oss`; unknown: the family."""
    for prefix, line in _LINES:
        if family.startswith(prefix):
            return line
    return family
