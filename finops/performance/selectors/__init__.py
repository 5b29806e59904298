"""Reads of unit economics and performance: cost per outcome, outcome counts, eval scores, a workload's
performance section."""
