"""Unit economics' tables: outcome batches and counts (the rollups of measured performance stay in
finops/performance/models/performance.py)."""
