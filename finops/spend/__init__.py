"""Spend and attribution, one domain in one folder (issue 27): usage lines, tag sets and line signatures, the
daily and monthly rollups (models/, services/rollups.py, monthly_rollup.py), attribution and its rules (services/,
selectors/rules.py), the spend reads every page and the report use (selectors/: spend.py, spend_report.py,
explore.py, periods.py, ...), the spend pages (views/: overview, teams, workloads, providers, explore, unattributed,
rules, the FOCUS usage export) and the export's API (api/)."""
