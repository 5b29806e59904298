"""Where usage comes from: providers, their billing accounts, and the ingest runs that read them."""

from django.db import models


class ConnectorKind(models.TextChoices):
    """The source kinds ingest/connectors implements; the registry there is keyed by these values."""

    OPENAI_API = "openai_api", "OpenAI Admin API"
    ANTHROPIC_API = "anthropic_api", "Anthropic Admin API"
    OPENROUTER_API = "openrouter_api", "OpenRouter activity API"
    LITELLM_API = "litellm_api", "LiteLLM proxy (spend logs API)"
    FOCUS_FILE = "focus_file", "FOCUS export file"
    GATEWAY_LOG = "gateway_log", "Gateway log (LiteLLM, OpenAI-compatible JSONL)"
    USAGE_CSV = "usage_csv", "Usage CSV (this product's format)"


API_CONNECTORS = {
    ConnectorKind.OPENAI_API,
    ConnectorKind.ANTHROPIC_API,
    ConnectorKind.OPENROUTER_API,
    ConnectorKind.LITELLM_API,
}
# API connectors whose source also exports files the same reader takes: a LiteLLM proxy's spend logs, exported
# (its UI's CSV, a database dump), backfill the days the live pull cannot reach (before the proxy's retention, or
# before the account was connected). The file is read by that file connector's reader (ingest/connectors/registry.py).
BACKFILL_FILES = {ConnectorKind.LITELLM_API: ConnectorKind.GATEWAY_LOG}
# Every scheduled pull re-reads the last LOOKBACK_DAYS days (ingest.windows), so a day is settled once a pull has
# run that many days after it: a month's report is "provisional" until then (finops.reports.selectors.tco_sections).
LOOKBACK_DAYS = 3
FILE_CONNECTORS = [kind.value for kind in ConnectorKind if kind not in API_CONNECTORS or kind in BACKFILL_FILES]


class Provider(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    builtin = models.BooleanField(default=False, help_text="Seeded with the product; user-added providers are not.")

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Account(models.Model):
    """One billing source of a provider: an API organisation, or a stream of export files."""

    name = models.CharField(max_length=120, unique=True)
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="accounts")
    connector = models.CharField(max_length=32, choices=ConnectorKind.choices)
    base_url = models.URLField(blank=True, help_text="API base URL; change it for a proxy or a regional host.")
    # Fernet token of the secret (finops.core.crypto); never rendered, never logged.
    credentials_ciphertext = models.TextField(blank=True, editable=False)
    # The first characters of the secret, so people can tell keys apart without seeing them.
    credentials_hint = models.CharField(max_length=16, blank=True, editable=False)
    credentials_env = models.CharField(
        max_length=128, blank=True, help_text="Environment variable the secret was read from (config as code)."
    )
    enabled = models.BooleanField(default=True)
    # A FOCUS file account imports its provider's LLM inference only (ingest/connectors/focus/scope.py); these
    # ServiceNames widen or narrow that (case-insensitive, exact names as the file spells them).
    focus_services_include = models.JSONField(
        default=list, blank=True, help_text="FOCUS ServiceNames to import besides LLM inference."
    )
    focus_services_exclude = models.JSONField(default=list, blank=True, help_text="FOCUS ServiceNames never to import.")
    sync_interval_minutes = models.PositiveIntegerField(default=60, help_text="How often the API is pulled.")
    last_sync_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # One run per account at a time: a run holds this lease (claimed with a conditional UPDATE) until it
    # ends; a killed worker's lease simply expires and the next run takes over.
    lease_token = models.CharField(max_length=36, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def has_credentials(self) -> bool:
        return bool(self.credentials_ciphertext)

    @property
    def credentials_display(self) -> str:
        return f"{self.credentials_hint}…" if self.credentials_ciphertext else "—"

    @property
    def is_api(self) -> bool:
        return self.connector in API_CONNECTORS

    @property
    def reads_files(self) -> bool:
        """Uploads are accepted: a file account, or an API account whose exports backfill it (BACKFILL_FILES)."""
        return self.connector in FILE_CONNECTORS


class IngestRun(models.Model):
    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        MANUAL = "manual", "Sync now"
        UPLOAD = "upload", "File upload"
        BACKFILL = "backfill", "Backfill"
        COMMAND = "command", "Command line"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="runs")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    file_name = models.CharField(max_length=255, blank=True)
    # An uploaded export waits here for the worker that imports it (kept for re-runs and audit).
    upload = models.FileField(upload_to="imports/%Y/%m/", blank=True)
    lines_read = models.PositiveIntegerField(default=0)
    lines_written = models.PositiveIntegerField(default=0)
    lines_replaced = models.PositiveIntegerField(default=0)
    lines_rejected = models.PositiveIntegerField(default=0)
    # What a FOCUS import left out (not the account's provider, not LLM inference, excluded by its settings):
    # {"rows": n, "services": [{"service", "reason", "currency", "rows", "cost" (exact decimal text)}]}; {} when none.
    left_out = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["account", "-created_at"])]

    def __str__(self):
        return f"{self.account} {self.trigger} {self.status}"

    # Runs of a file someone handed in (the Sources page, the API, `import_usage`): when one fails, the file was
    # refused and nothing of it was written (a run is all or nothing). That is the uploader's error, shown to the
    # uploader (the upload's status, the account's runs), never the account's state nor a "source failing" alert.
    HANDED_IN = (Trigger.UPLOAD, Trigger.COMMAND)

    @property
    def refused_file(self) -> bool:
        return self.status == self.Status.FAILED and bool(self.file_name) and self.trigger in self.HANDED_IN

    @property
    def left_out_summary(self) -> str:
        """ "left out 1,958 rows, $41,250.23: Amazon EC2 $18,002.10, …" (empty when nothing was): the one text the
        command, the API and the pages show."""
        from finops.core.display import left_out_text  # display imports models

        return left_out_text(self.left_out)

    @property
    def left_out_brief(self) -> str:
        """The same, naming the three largest services (the Sources list)."""
        from finops.core.display import left_out_text

        return left_out_text(self.left_out, services=3)

    @property
    def duration(self):
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None
