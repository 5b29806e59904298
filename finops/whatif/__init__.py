"""The what-if across providers (issue 13): the calculator (pure), model families, routing as LiteLLM config."""
