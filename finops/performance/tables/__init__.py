"""The scorecard's and the performance section's tables, each defined once (finops.reports.tables)."""
