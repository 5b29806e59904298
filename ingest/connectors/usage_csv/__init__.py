"""The product's own usage CSV (docs/usage-csv.md): one row per day, provider and model."""
