"""Model instances from a plain SELECT, for the few reads every request makes (issue 27).

The ORM spends a few hundred microseconds of CPU building and compiling even a one-row query by key; on the reads
that every request makes (its session's user, its API token) that was a third of a small request's CPU. These
helpers write the column list from the model's fields and turn a row back into the model instance the ORM would
have made: the same database adaptations and field converters (`from_db_value`), the same `Model.from_db`."""

from django.db import models


def columns(model: type[models.Model], alias: str, connection) -> str:
    """The model's concrete columns, qualified by the table alias, in `_meta.concrete_fields` order."""
    quote = connection.ops.quote_name
    return ", ".join(f"{quote(alias)}.{quote(field.column)}" for field in model._meta.concrete_fields)


def instance(model: type[models.Model], values, using: str, connection) -> models.Model:
    """The instance for `values`, one per concrete field in `columns`' order, as the ORM's iterator makes it."""
    values = list(values)
    for index, field in enumerate(model._meta.concrete_fields):
        col = field.get_col(model._meta.db_table)
        for convert in connection.ops.get_db_converters(col) + col.get_db_converters(connection):
            values[index] = convert(values[index], col, connection)
    return model.from_db(using, [field.attname for field in model._meta.concrete_fields], values)
