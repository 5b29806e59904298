"""Where alerts go (issue 25): a Channel is a row an owner (a team, or the organisation when `team` is empty) keeps:
an email list (addresses and roles), a signed webhook, a Slack or a Microsoft Teams incoming webhook. A cap, a
contract or a workload chooses channels; the event's team's default channels, then the organisation's, take what
nobody chose (finops/notify/recipients.py). Every organisation has default channels, and every team a default email
channel to its leads (finops/alerts/services/channels.py, default_channels_ensure): they say who hears what nobody
chose.

The URL of a webhook, Slack or Teams channel is itself a secret (a Slack incoming webhook URL posts to the channel
for anyone who has it) and may carry credentials: it is stored encrypted (finops.core.crypto, like provider keys) with
its scheme and host kept apart as `url_label`, the only part shown outside the Django admin, and only to those
who may edit the channel. The webhook's signing secret is never shown after the form that set it.
"""

from django.db import models

from finops.alerts.models.caps import Cap
from finops.contracts.models import Contract
from finops.org.models.org import Team, Workload


class ChannelKind(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook (signed JSON)"
    SLACK = "slack", "Slack"
    TEAMS = "teams", "Microsoft Teams"


class Channel(models.Model):
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="channels",
        help_text="The team that owns it; empty: the organisation's.",
    )
    # Email: addresses and roles (role:team_leads, role:finance, role:admins), as a cap's recipients were.
    addresses = models.JSONField(default=list, blank=True)
    # Webhook, Slack, Teams: the URL, encrypted; its scheme and host apart, for display.
    url_ciphertext = models.TextField(blank=True, editable=False)
    url_label = models.CharField(max_length=300, blank=True, editable=False)
    secret_ciphertext = models.TextField(blank=True, editable=False)  # the webhook's HMAC secret
    kinds = models.JSONField(default=list, blank=True, help_text="The alert kinds it takes; empty: every kind.")
    is_default = models.BooleanField(
        default=False, help_text="Takes its owner's alerts that no cap, contract or workload sent elsewhere."
    )
    caps = models.ManyToManyField(Cap, blank=True, related_name="channels")
    contracts = models.ManyToManyField(Contract, blank=True, related_name="channels")
    workloads = models.ManyToManyField(Workload, blank=True, related_name="channels")
    # A cap's own recipients and webhook (the cap form's fields), kept in step by the cap's services.
    for_cap = models.ForeignKey(Cap, on_delete=models.CASCADE, null=True, blank=True, related_name="own_channels")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "name", "id"]

    def __str__(self):
        return self.name

    def takes(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds

    @property
    def is_http(self) -> bool:
        return self.kind != ChannelKind.EMAIL
