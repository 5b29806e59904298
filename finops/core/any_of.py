"""`AnyOf("workload_id", ids)`: a filter on a column being one of many ids, sent as one array parameter on Postgres.

`filter(workload_id__in=ids)` with a few hundred ids costs more on the client than in Postgres: Django prepares each
value as a lookup parameter and psycopg's client-side binding splits a statement of hundreds of placeholders and
quotes each (the quarterly scorecard of 400 workloads ran ten such statements, ~40 ms of its ~150 ms; issue 23).
`column = ANY(%s)` with the list as one parameter is the same condition (performance_totals writes its SQL so).
SQLite, the demo's, has no arrays: there it is the IN list. An empty list matches nothing, as `__in=[]` does.
"""

from django.db.models import BooleanField, F, Func


class AnyOf(Func):
    output_field = BooleanField()

    def __init__(self, column: str, values):
        super().__init__(F(column))
        self.values = [int(value) for value in values]

    def as_sql(self, compiler, connection, **extra_context):
        column, params = compiler.compile(self.source_expressions[0])
        if not self.values:
            return "1 = 0", tuple(params)
        if connection.vendor == "postgresql":
            return f"{column} = ANY(%s)", (*params, self.values)
        return f"{column} IN ({', '.join(['%s'] * len(self.values))})", (*params, *self.values)
