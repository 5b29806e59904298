"""Gateway request logs (LiteLLM_SpendLogs CSV, JSON, JSONL) -> hourly lines with latency: log.py reads records,
columns.py reads a CSV as columns (docs/litellm.md)."""
