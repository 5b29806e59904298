"""A delivery may be a "restated" email (issue 24): `restates` names the version the recipient had been sent; the
monthly email stays once per subscription × month, and every version goes once per subscription. Keeps every row."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("finops", "0025_latency_cells"),
    ]

    operations = [
        migrations.AddField(
            model_name="reportdelivery",
            name="restates",
            field=models.ForeignKey(blank=True, help_text="A restated email: the version the recipient had been sent. Empty: the monthly email.",
                                    null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="finops.reportsnapshot"),
        ),
        migrations.RemoveConstraint(model_name="reportdelivery", name="reportdelivery_once"),
        migrations.AddConstraint(
            model_name="reportdelivery",
            constraint=models.UniqueConstraint(condition=models.Q(restates__isnull=True), fields=("subscription", "month"),
                                               name="reportdelivery_once"),
        ),
        migrations.AddConstraint(
            model_name="reportdelivery",
            constraint=models.UniqueConstraint(fields=("subscription", "snapshot"), name="reportdelivery_version_once"),
        ),
    ]
