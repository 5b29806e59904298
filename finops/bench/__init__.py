"""The page bench (`manage.py bench_pages`): a generated organisation with a year of usage lines, the spend pages
timed against it, and a re-attribution that moves a fifth of the lines.

- org.py       the organisation (teams, workloads, accounts, API keys, rules) and the usage series it produces
- lines.py     the usage lines, written with COPY; the one place that knows the usage-line columns
- pages.py     the measurements, the checks and the JSON figures
"""
