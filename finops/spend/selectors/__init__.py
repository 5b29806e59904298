"""Reads of spend: the rollups over any period, the spend report, explore and its line drill-downs, unattributed
spend, why spend moved, shared charges, reconciliation, the rules' claims, the FOCUS usage export's lines."""
