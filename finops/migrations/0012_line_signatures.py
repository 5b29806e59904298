"""Lines point at a LineSignature that holds their workload and team; the lines' own workload and team go.

A rule change then updates a few thousand signatures instead of millions of lines (docs/attribution.md).
"""

import hashlib
import json

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery

KEY = ("account_id", "provider_id", "project_ref", "api_key_ref", "user_ref", "model", "model_raw", "tag_set_id")


def _signature_id(key: tuple) -> int:
    # A frozen copy of finops.models.usage.signature_id: ids must not change with later code.
    text = json.dumps(list(key), sort_keys=True, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def lines_to_signatures(apps, schema_editor):
    """Every distinct signature of the existing lines becomes a LineSignature with the lines' workload and team
    (lines equal on the signature were attributed alike; should they not be, the highest workload id wins and
    the next rule change settles it), and its lines point at it.

    On Postgres one UPDATE … FROM a staged map (a hash join on the key) sets every line; elsewhere (the demo's
    SQLite, small) one UPDATE per signature.
    """
    UsageLine, LineSignature = apps.get_model("finops", "UsageLine"), apps.get_model("finops", "LineSignature")
    targets: dict[tuple, tuple] = {}
    for *key, workload_id, team_id in UsageLine.objects.values_list(*KEY, "workload_id", "team_id").order_by().distinct():
        key = tuple(key)
        if key not in targets or (workload_id or 0) > (targets[key][0] or 0):
            targets[key] = (workload_id, team_id)
    ids = {key: _signature_id(key) for key in targets}
    LineSignature.objects.bulk_create(
        [LineSignature(id=ids[key], **dict(zip(KEY, key)), workload_id=w, team_id=t) for key, (w, t) in targets.items()],
        batch_size=2000,
    )
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        for key, identity in ids.items():
            UsageLine.objects.filter(**dict(zip(KEY, key))).update(signature_id=identity)
        return
    columns = ", ".join(KEY)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMP TABLE signature_map ON COMMIT DROP AS SELECT id, {columns} FROM finops_linesignature")
        cursor.execute("ANALYZE signature_map")
        join = " AND ".join(f"u.{c} = m.{c}" for c in KEY)
        cursor.execute(f"UPDATE finops_usageline u SET signature_id = m.id FROM signature_map m WHERE {join}")
        cursor.execute("DROP TABLE signature_map")


def signatures_to_lines(apps, schema_editor):
    """Back: each line takes its signature's workload and team."""
    UsageLine, LineSignature = apps.get_model("finops", "UsageLine"), apps.get_model("finops", "LineSignature")
    own = LineSignature.objects.filter(id=OuterRef("signature_id"))
    UsageLine.objects.update(
        workload_id=Subquery(own.values("workload_id")[:1]), team_id=Subquery(own.values("team_id")[:1])
    )


class Migration(migrations.Migration):

    dependencies = [
        ("finops", "0011_dailyspend_page_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="LineSignature",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("project_ref", models.CharField(blank=True, max_length=255)),
                ("api_key_ref", models.CharField(blank=True, max_length=255)),
                ("user_ref", models.CharField(blank=True, max_length=255)),
                ("model", models.CharField(max_length=200)),
                ("model_raw", models.CharField(max_length=300)),
                ("account", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="finops.account")),
                ("provider", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="finops.provider")),
                ("tag_set", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="finops.tagset")),
                ("team", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="finops.team")),
                ("workload", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="finops.workload")),
            ],
            options={
                "indexes": [models.Index(fields=["workload"], name="line_signature_workload")],
            },
        ),
        migrations.AddField(
            model_name="usageline",
            name="signature",
            field=models.ForeignKey(
                db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE,
                related_name="+", to="finops.linesignature",
                help_text="What attribution looks at, and its workload and team.",
            ),
        ),
        migrations.RunPython(lines_to_signatures, signatures_to_lines),
        migrations.AlterField(
            model_name="usageline",
            name="signature",
            field=models.ForeignKey(
                db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE,
                related_name="+", to="finops.linesignature",
                help_text="What attribution looks at, and its workload and team.",
            ),
        ),
        migrations.RemoveField(model_name="usageline", name="workload"),
        migrations.RemoveField(model_name="usageline", name="team"),
    ]
