# Indexes for the spend pages at 10M usage lines (issue 4 page bench).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("finops", "0010_lean_usage_lines"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="dailyspend",
            index=models.Index(fields=["provider", "day"], name="dailyspend_provider_day"),
        ),
        migrations.AddIndex(
            model_name="dailyspend",
            index=models.Index(fields=["model", "day"], name="dailyspend_model_day"),
        ),
    ]
