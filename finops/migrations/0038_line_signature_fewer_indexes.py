"""Line signatures keep two partial indexes of their five (issue 23): by workload and by team where set.

A gateway log whose keys, users and teams do not come together has a signature per line, and each signature's
INSERT paid for five secondary B-trees, about half its cost (200k signatures: 3.5–4.0 s with them, 1.7 s without).
No query looks signatures up by account, provider or tag set but those rows' own deletion (rare; a scan of the
table does); rules and re-attribution evaluate a CASE over every signature. Workload and team lookups (a workload
moving team, a team's or a workload's lines, SET_NULL on their deletion) name a value, so an index of the
signatures that have one serves them, and an unattributed signature costs no index. EXPLAINs: docs/ingestion.md.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('finops', '0037_default_channels'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='linesignature',
            name='line_signature_workload',
        ),
        migrations.AlterField(
            model_name='linesignature',
            name='account',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='finops.account'),
        ),
        migrations.AlterField(
            model_name='linesignature',
            name='provider',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='finops.provider'),
        ),
        migrations.AlterField(
            model_name='linesignature',
            name='tag_set',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='finops.tagset'),
        ),
        migrations.AlterField(
            model_name='linesignature',
            name='team',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='finops.team'),
        ),
        migrations.AddIndex(
            model_name='linesignature',
            index=models.Index(condition=models.Q(('workload__isnull', False)), fields=['workload'], name='line_signature_workload_set'),
        ),
        migrations.AddIndex(
            model_name='linesignature',
            index=models.Index(condition=models.Q(('team__isnull', False)), fields=['team'], name='line_signature_team_set'),
        ),
    ]
