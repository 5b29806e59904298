"""Writes of spend: the daily and monthly rollups rebuilt for the days a write touched, attribution of signatures
to workloads, and the rules' one write path."""
