# Indexes for the spend pages at 10M usage lines (issue 4 page bench). Numbered 0100 to be renumbered at merge.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("finops", "0008_user_time_zone"),
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
