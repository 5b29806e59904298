"""The spend tables: usage lines, tag sets, signatures, the daily and monthly rollups, attribution rules and
re-attribution jobs, a gateway's cache hits."""
