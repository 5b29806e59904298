"""The data version the page cache keys on (issue 23; finops/web/data_version.py): its table and trigger function.
The triggers themselves are added to every table by finops.web.data_version.install_triggers after each migrate, so a
table created by a later migration gets one too. Postgres only: the demo's SQLite has no page cache."""

from django.db import migrations

from finops.web import data_version


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(data_version.CREATE_TABLE)
        schema_editor.execute(data_version.CREATE_FUNCTION)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(data_version.DROP)


class Migration(migrations.Migration):
    dependencies = [("finops", "0041_signature_daily_performance")]

    operations = [migrations.RunPython(create, drop)]
