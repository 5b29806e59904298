"""The benches (`make bench*`, `manage.py bench_*`), outside the product package: the product never imports them.

The page bench (`manage.py bench_pages`): a generated organisation with a year of usage lines, the spend pages
timed against it, and a re-attribution that moves a fifth of the lines.

- org.py       the organisation (teams, workloads, accounts, API keys, rules) and the usage series it produces
- lines.py     the usage lines, written with COPY; the one place that knows the usage-line columns
- pages.py     the measurements, the checks and the JSON figures

The ingest benches (`manage.py bench_ingest`):

- focus_ingest.py   a generated FOCUS 1.2 (AWS Bedrock) export imported end to end on Postgres, beside a plain COPY
                    of the same rows, each in its own child process so peak memory is per run
- focus_export.py   that generated export (focus_resources.py: the whole-cloud rows around it)
- gateway_ingest.py, gateway_export.py   the same for a LiteLLM gateway log

Every bench's JSON records the machine it ran on (machine.py: cores, CPU, one core's speed, Postgres settings).
"""
