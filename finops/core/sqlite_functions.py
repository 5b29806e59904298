"""SQL the demo's SQLite lacks and the rollups use, registered on each new SQLite connection: `bit_or`, the
aggregate Postgres has (the performance rollup's hour masks, finops.performance.services.performance_rollup)."""

from django.db.backends.signals import connection_created


class _BitOr:
    def __init__(self):
        self.value = None

    def step(self, value):
        if value is not None:
            self.value = (self.value or 0) | int(value)

    def finalize(self):
        return self.value


def _register(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.connection.create_aggregate("bit_or", 1, _BitOr)


def install() -> None:
    connection_created.connect(_register, dispatch_uid="finops.core.sqlite_functions")
