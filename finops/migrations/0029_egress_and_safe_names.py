"""Issue 25 (security): team and workload names refuse control characters (finops.core.text.name_check, run by the
Django admin), and webhook notifications lose the credentials their labels kept.

Webhook notifications recorded before the egress policy named the receiver by `scheme://netloc`, which kept
credentials written in the URL (`http://user:pass@host`). Rewrite those labels (and the errors quoting them) as
scheme and host only, as finops.core.egress.url_label records them now."""

from urllib.parse import urlsplit

from django.db import migrations, models

import finops.core.text


def _label(recorded: str) -> str:
    parts = urlsplit(recorded.removesuffix("/…"))
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    return shown + "/…" if recorded.endswith("/…") else shown


def forwards(apps, schema_editor):
    Notification = apps.get_model("finops", "Notification")
    for notification in Notification.objects.filter(channel="webhook", recipient__contains="@").iterator():
        old = notification.recipient
        notification.recipient = _label(old)
        notification.error = notification.error.replace(old, notification.recipient)
        notification.save(update_fields=["recipient", "error"])


class Migration(migrations.Migration):
    dependencies = [("finops", "0028_usage_line_invoice_id")]
    operations = [
        migrations.AlterField(model_name="team", name="name",
                              field=models.CharField(max_length=120, unique=True, validators=[finops.core.text.name_check])),
        migrations.AlterField(model_name="workload", name="name",
                              field=models.CharField(max_length=120, validators=[finops.core.text.name_check])),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
