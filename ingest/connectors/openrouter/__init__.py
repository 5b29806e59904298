"""OpenRouter's activity endpoint: billed cost and tokens per day, model and upstream endpoint."""
