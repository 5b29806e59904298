"""Move every cap's recipients and webhook into channels the cap chooses (issue 25): an email channel with the cap's
addresses and roles, a webhook channel with its URL (now encrypted) and signing secret. The same people and
receivers get the same alerts before and after (tests/test_channels.py runs this on a test organisation and the
demo's caps). finops.services.channels.cap_channels_sync keeps these rows in step with later edits of a cap."""

from django.db import migrations


def _owning_team_id(cap):
    if cap.scope == "team":
        return cap.team_id
    if cap.scope == "workload" and cap.workload_id:
        return cap.workload.team_id
    return None


def caps_to_channels(apps, schema_editor):
    from finops.core import crypto, egress

    Cap = apps.get_model("finops", "Cap")
    Channel = apps.get_model("finops", "Channel")
    for cap in Cap.objects.select_related("workload").order_by("id"):
        team_id = _owning_team_id(cap)
        if cap.recipients and not Channel.objects.filter(for_cap=cap, kind="email").exists():
            channel = Channel.objects.create(
                name=f"{cap.name}: email"[:120], kind="email", team_id=team_id, addresses=list(cap.recipients), for_cap=cap
            )
            channel.caps.add(cap)
        if cap.webhook_url and not Channel.objects.filter(for_cap=cap, kind="webhook").exists():
            channel = Channel.objects.create(
                name=f"{cap.name}: webhook"[:120],
                kind="webhook",
                team_id=team_id,
                url_ciphertext=crypto.encrypt(cap.webhook_url),
                url_label=egress.url_label(cap.webhook_url),
                secret_ciphertext=cap.webhook_secret_ciphertext,
                for_cap=cap,
            )
            channel.caps.add(cap)


def channels_back(apps, schema_editor):
    apps.get_model("finops", "Channel").objects.exclude(for_cap=None).delete()


class Migration(migrations.Migration):
    dependencies = [("finops", "0033_channels")]

    operations = [migrations.RunPython(caps_to_channels, channels_back)]
