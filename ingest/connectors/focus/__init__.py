"""FOCUS 1.0-1.3 cost-and-usage exports (AWS, Azure, GCP): file.py reads rows, batches.py columns; scope.py keeps
a cloud account's LLM inference (docs/connectors/aws-bedrock.md)."""
