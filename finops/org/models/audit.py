"""The audit log (issue 16): one row per change to an account, rule, cap, contract, offering, user or API token,
written by that entity's service (finops.org.services.audit.audit_record), whichever path asked for the change: a
page, the API, `apply_config`, a command or the Django admin.

`before` and `after` are JSON snapshots of what the change touched; a secret (provider key, webhook signing
secret) is never in them, only "set" or "changed". Rows are never updated or deleted by the product."""

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    class Action(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        DELETED = "deleted", "Deleted"
        REVOKED = "revoked", "Revoked"
        ROTATED = "rotated", "Rotated"

    class Entity(models.TextChoices):
        ACCOUNT = "account", "Account"
        RULE = "rule", "Rule"
        CAP = "cap", "Cap"
        CONTRACT = "contract", "Contract"
        OFFERING = "offering", "Offering"
        FAMILY = "family", "Model family"
        ROUTING = "routing_policy", "Routing policy"
        USER = "user", "User"
        TOKEN = "token", "API token"
        ENCRYPTION_KEY = "encryption_key", "Encryption key"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Who, as text that outlives the user row: a username, or the source ("config", "cli") when no one signed in.
    actor_label = models.CharField(max_length=150)
    source = models.CharField(max_length=16, help_text="ui, api, admin, config, cli or system")
    action = models.CharField(max_length=16, choices=Action.choices)
    entity_type = models.CharField(max_length=32, choices=Entity.choices)
    entity_id = models.CharField(max_length=64, blank=True)
    entity_label = models.CharField(max_length=255)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    changed = models.JSONField(default=list, blank=True, help_text="The fields that differ between before and after.")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["entity_type", "entity_id"], name="audit_entity")]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.entity_type} {self.entity_label}"
