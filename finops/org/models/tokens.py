"""API tokens (issue 16). django-rest-knox keeps the credential (a SHA-512 digest and an 8-character prefix, never
the token); ApiToken sits beside it with what knox has no place for: a name, a scope, last use and revocation.
Revoking deletes the knox row (so knox refuses the token) and keeps this one, for the list and the audit log."""

from django.conf import settings
from django.db import models
from knox.models import AuthToken


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "Read-only"
        WRITE = "write", "Read-write"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    auth_token = models.OneToOneField(
        AuthToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="details"
    )
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=255, blank=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, the only part ever shown again.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def read_only(self) -> bool:
        return self.scope == self.Scope.READ
