# Idempotency keys belong to their sender and remember their body (issue 26); re-subscribing voids old unsubscribe links.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('finops', '0026_report_restated_deliveries'),
    ]

    operations = [
        migrations.AddField(
            model_name='outcomebatch',
            name='body_digest',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name='outcomebatch',
            name='sender',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='reportsubscription',
            name='resubscribed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='outcomebatch',
            name='idempotency_key',
            field=models.CharField(max_length=128),
        ),
        migrations.AddConstraint(
            model_name='outcomebatch',
            constraint=models.UniqueConstraint(fields=('sender', 'idempotency_key'), name='outcomebatch_sender_key'),
        ),
    ]
