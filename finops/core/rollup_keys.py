"""How a rollup table points at what it sums by (issue 23): DailySpend, MonthlySpend, TeamDailySpend,
DailyPerformance and MonthlyPerformance keep no database-level foreign keys. They are derived from the usage lines
in the transaction that writes them, from ids just read, and a year's rebuild writes ~600k rows, each a deferred
check per key at commit (10M-line page bench: 1.4 s of a month's 7.7 s rebuild went to the commit). Django applies
on_delete (CASCADE, PROTECT, SET_NULL) itself, as it does for the lines (finops.spend.models.usage `_FACT_FK`)."""

ROLLUP_FK = {"db_constraint": False, "related_name": "+"}
