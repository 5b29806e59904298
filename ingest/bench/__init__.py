"""Benchmarks of the ingest path (`make bench`, `manage.py bench_ingest`); not imported by the product.

focus_ingest.py: a generated FOCUS 1.2 (AWS Bedrock) export imported end to end on Postgres, beside a
plain COPY of the same rows, each in its own child process so peak memory is per run.
focus_export.py: that generated export.
"""
