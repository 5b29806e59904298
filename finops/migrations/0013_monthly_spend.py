# The monthly rollup (issue 4 page bench: Explore over a year), filled from the daily rollup in one set-based
# INSERT … SELECT … GROUP BY. Compiled by the ORM so it runs on Postgres and on the demo's SQLite.

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Sum
from django.db.models.functions import TruncMonth

DIMENSIONS = ("account_id", "provider_id", "model", "workload_id", "team_id", "currency", "cost_basis", "charge_category")
MEASURES = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests", "cost",
            "reporting_cost", "line_count")


def fill_from_daily(apps, schema_editor):
    daily, monthly = apps.get_model("finops", "DailySpend"), apps.get_model("finops", "MonthlySpend")
    connection = schema_editor.connection
    grouped = (
        daily.objects.using(connection.alias)
        .annotate(month=TruncMonth("day"))
        .values("month", *DIMENSIONS)
        .annotate(**{measure: Sum(measure) for measure in MEASURES})
        .values_list("month", *DIMENSIONS, *MEASURES)
        .order_by()
    )
    select_sql, params = grouped.query.sql_with_params()
    columns = ", ".join(connection.ops.quote_name(c) for c in ("month", *DIMENSIONS, *MEASURES))
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {monthly._meta.db_table} ({columns}) {select_sql}", params)


class Migration(migrations.Migration):

    dependencies = [
        ('finops', '0012_line_signatures'),
    ]

    operations = [
        migrations.CreateModel(
            name='MonthlySpend',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('input_tokens', models.PositiveBigIntegerField(default=0, help_text='Uncached input tokens.')),
                ('cached_input_tokens', models.PositiveBigIntegerField(default=0, help_text='Input tokens read from a cache.')),
                ('cache_write_tokens', models.PositiveBigIntegerField(default=0, help_text='Input tokens written to a cache.')),
                ('output_tokens', models.PositiveBigIntegerField(default=0)),
                ('requests', models.PositiveBigIntegerField(default=0)),
                ('month', models.DateField(help_text='The first day of the UTC calendar month.')),
                ('model', models.CharField(max_length=200)),
                ('currency', models.CharField(max_length=3)),
                ('cost_basis', models.CharField(choices=[('billed', 'Billed'), ('estimated', 'Estimated'), ('unpriced', 'Unpriced')], max_length=16)),
                ('charge_category', models.CharField(choices=[('usage', 'Usage'), ('credit', 'Credit'), ('tax', 'Tax'), ('purchase', 'Purchase'), ('adjustment', 'Adjustment')], max_length=16)),
                ('cost', models.DecimalField(blank=True, decimal_places=18, max_digits=38, null=True)),
                ('reporting_cost', models.DecimalField(blank=True, decimal_places=18, max_digits=38, null=True)),
                ('line_count', models.PositiveIntegerField(default=0)),
                ('account', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='finops.account')),
                ('provider', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='finops.provider')),
                ('team', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='finops.team')),
                ('workload', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='finops.workload')),
            ],
            options={
                'indexes': [models.Index(fields=['month'], name='monthlyspend_month'), models.Index(fields=['team', 'month'], name='monthlyspend_team_month'), models.Index(fields=['workload', 'month'], name='monthlyspend_workload_month'), models.Index(fields=['account', 'month'], name='monthlyspend_account_month'), models.Index(fields=['provider', 'month'], name='monthlyspend_provider_month'), models.Index(fields=['model', 'month'], name='monthlyspend_model_month')],
            },
        ),
        migrations.RunPython(fill_from_daily, migrations.RunPython.noop, elidable=True),
    ]
