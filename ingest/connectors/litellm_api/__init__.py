"""A LiteLLM proxy's spend logs pulled over its admin API (docs/litellm.md); the records are read as gateway/ does."""
