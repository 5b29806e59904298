"""The demo organisation (`make demo`, docs/demo.md), outside the product package: the product never imports it.

- load.py          load_demo: the organisation, its imports through the real import code, caps, contracts, reports
- generate.py      the usage series and the config (config.yaml, a template of `apply_config`'s format)
- exports.py       the series as the export files a real customer of each provider would produce
- spend_logs.py    the gateway accounts' export: LiteLLM's spend logs, one record per request, timed
- prices.py, outcomes.py, evals.py, reports.py   the demo's price changes, outcome counts, eval scores, report story
"""
