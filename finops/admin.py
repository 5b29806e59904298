"""Django admin for every model. Secrets: a write-only field sets them; only the hint is ever shown.

Spend itself — the usage lines, both rollups, tag sets and line signatures — is read-only here: no add, change
or delete, no bulk delete. Deleting one usage line by hand once left the raw lines and the rollup disagreeing
(invariant 7); spend changes through imports (Sources) and attribution rules (Rules), which rebuild the rollups.
"""

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import ValidationError
from knox.models import AuthToken

from finops.alerts.services.channels import channel_save, channel_url_check
from finops.models import (
    Account,
    Channel,
    ChannelKind,
    DailySpend,
    FxRate,
    IngestRun,
    LineSignature,
    Membership,
    ModelPrice,
    MonthlySpend,
    Provider,
    TagSet,
    Team,
    UsageLine,
    User,
    Workload,
)
from finops.org.services.users import user_admin_delete, user_admin_save, user_memberships_change
from finops.sources.services.accounts import account_admin_delete, account_admin_save
from finops.spend.services.attribution import workload_team_move

# API tokens have one write path, the API page and `create_api_token` (finops.org.services.api_tokens): knox's own admin
# would make tokens without a scope (refused by the API) and delete them without marking them revoked.
if admin.site.is_registered(AuthToken):
    admin.site.unregister(AuthToken)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    fieldsets = DjangoUserAdmin.fieldsets + (("FinOps", {"fields": ("role", "time_zone")}),)
    list_display = ("username", "email", "role", "is_staff", "is_active")
    list_filter = ("role", "is_active")

    # Every change goes through finops.org.services.users, which records it in the audit log.
    def save_model(self, request, obj, form, change):
        user_admin_save(
            user=obj, save=lambda: super(UserAdmin, self).save_model(request, obj, form, change), by=request.user
        )

    def delete_model(self, request, obj):
        user_admin_delete(user=obj, by=request.user)

    def delete_queryset(self, request, queryset):
        for user in queryset:
            user_admin_delete(user=user, by=request.user)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "cost_center")
    search_fields = ("name", "slug", "cost_center")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]

    def save_formset(self, request, form, formset, change):
        # Memberships are part of a user's audit record: the users before and after the inline's save.
        users = (
            {m.user for m in Membership.objects.filter(team=form.instance).select_related("user")}
            if form.instance.pk
            else set()
        )
        users |= {
            f.cleaned_data["user"]
            for f in formset.forms
            if getattr(f, "cleaned_data", None) and f.cleaned_data.get("user")
        }
        user_memberships_change(
            users=users,
            change=lambda: super(TeamAdmin, self).save_formset(request, form, formset, change),
            by=request.user,
        )


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "team", "latency_profile", "sla_seconds", "batch_window_hours", "outcome_unit")
    list_filter = ("latency_profile", "team")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}

    def save_model(self, request, obj, form, change):
        # A workload moved to another team takes its history along and says spend changed, as in config apply.
        if change and "team" in form.changed_data:
            workload_team_move(workload=obj, team=obj.team)
        else:
            super().save_model(request, obj, form, change)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role")
    list_filter = ("role", "team")

    def save_model(self, request, obj, form, change):
        users = {obj.user} | ({Membership.objects.get(pk=obj.pk).user} if obj.pk else set())
        user_memberships_change(
            users=users,
            change=lambda: super(MembershipAdmin, self).save_model(request, obj, form, change),
            by=request.user,
        )

    def delete_model(self, request, obj):
        user_memberships_change(users={obj.user}, change=obj.delete, by=request.user)

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("user"):
            self.delete_model(request, membership)


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "builtin")
    search_fields = ("name", "slug")


class AccountForm(forms.ModelForm):
    base_url = forms.URLField(
        required=False, assume_scheme="https", help_text=Account._meta.get_field("base_url").help_text
    )
    new_secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Paste a new API key to replace the stored one. Leave empty to keep it. It is encrypted and never "
        "shown.",
    )

    class Meta:
        model = Account
        fields = ["name", "provider", "connector", "base_url", "enabled", "sync_interval_minutes", "credentials_env"]


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    form = AccountForm
    list_display = ("name", "provider", "connector", "enabled", "credentials_display", "last_sync_at", "last_error")
    list_filter = ("provider", "connector", "enabled")
    readonly_fields = ("credentials_display", "last_sync_at", "last_success_at", "last_error", "last_error_at")
    search_fields = ("name",)

    @admin.display(description="Credentials")
    def credentials_display(self, obj):
        return obj.credentials_display

    def save_model(self, request, obj, form, change):
        account_admin_save(
            account=obj,
            save=lambda: super(AccountAdmin, self).save_model(request, obj, form, change),
            secret=form.cleaned_data.get("new_secret") or "",
            by=request.user,
        )

    def delete_model(self, request, obj):
        account_admin_delete(account=obj, by=request.user)

    def delete_queryset(self, request, queryset):
        for account in queryset:
            account_admin_delete(account=account, by=request.user)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Facts written by ingestion: viewable, never edited by hand (that would break rollups = raw)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(IngestRun)
class IngestRunAdmin(ReadOnlyAdmin):
    list_display = ("account", "trigger", "status", "file_name", "lines_read", "lines_written", "created_at")
    list_filter = ("status", "trigger", "account")


class SpendFactAdmin(ReadOnlyAdmin):
    """Spend facts: viewable by admins, never added, changed or deleted here (the delete action goes too, as
    Django drops an action its user has no permission for). Every page says where changes are made instead."""

    READ_ONLY_NOTE = (
        "Read-only: spend changes only through imports (Sources: upload or sync) and attribution rules (Rules), "
        "which keep the usage lines and the daily and monthly rollups equal. Editing or deleting here would not."
    )

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {**(extra_context or {}), "subtitle": self.READ_ONLY_NOTE})

    def render_change_form(self, request, context, *args, **kwargs):
        shown = context.get("subtitle")  # the object's name
        context["subtitle"] = f"{shown} — {self.READ_ONLY_NOTE}" if shown else self.READ_ONLY_NOTE
        return super().render_change_form(request, context, *args, **kwargs)


@admin.register(UsageLine)
class UsageLineAdmin(SpendFactAdmin):
    list_display = ("period_start", "account", "model", "cost", "currency", "cost_basis", "workload")
    list_select_related = ("account", "signature__workload")  # a line's workload is its signature's
    list_filter = ("cost_basis", "charge_category", "provider", "account")
    date_hierarchy = "period_start"
    show_full_result_count = False


@admin.register(DailySpend)
class DailySpendAdmin(SpendFactAdmin):
    list_display = ("day", "account", "model", "team", "workload", "reporting_cost", "cost_basis")
    list_filter = ("cost_basis", "provider")
    date_hierarchy = "day"
    show_full_result_count = False


@admin.register(MonthlySpend)
class MonthlySpendAdmin(SpendFactAdmin):
    list_display = ("month", "account", "model", "team", "workload", "reporting_cost", "cost_basis")
    list_select_related = ("account", "team", "workload")
    list_filter = ("cost_basis", "provider")
    date_hierarchy = "month"
    show_full_result_count = False


@admin.register(TagSet)
class TagSetAdmin(SpendFactAdmin):
    list_display = ("id", "__str__")
    show_full_result_count = False


@admin.register(LineSignature)
class LineSignatureAdmin(SpendFactAdmin):
    list_display = ("id", "account", "provider", "model", "project_ref", "api_key_ref", "workload", "team")
    list_select_related = ("account", "provider", "workload", "team")
    list_filter = ("provider", "account")
    search_fields = ("model", "project_ref", "api_key_ref")
    show_full_result_count = False


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    list_display = (
        "provider",
        "model",
        "effective_from",
        "effective_to",
        "input_per_mtok",
        "output_per_mtok",
        "source",
    )
    list_filter = ("provider", "source")
    search_fields = ("model",)


@admin.register(FxRate)
class FxRateAdmin(admin.ModelAdmin):
    list_display = ("currency", "day", "rate")
    list_filter = ("currency",)


class ChannelForm(forms.ModelForm):
    """The URL and the signing secret are write-only here too: blank keeps the stored ones."""

    new_url = forms.CharField(required=False, label="URL", help_text="Blank keeps the stored URL; never shown again.")
    new_secret = forms.CharField(
        required=False, label="Signing secret (webhook)", widget=forms.PasswordInput, help_text="Blank keeps it."
    )

    class Meta:
        model = Channel
        fields = ("name", "kind", "team", "addresses", "kinds", "is_default", "caps", "contracts", "workloads")

    def clean(self):
        """The service's checks, said on the form's fields rather than as an error page."""
        data = super().clean()
        try:
            if data.get("new_url"):
                channel_url_check(data["new_url"])
            elif data.get("kind") not in (None, ChannelKind.EMAIL) and not self.instance.url_ciphertext:
                raise ValidationError({"url": "Give the channel's URL."})
        except ValidationError as exc:
            self.add_error("new_url", exc.message_dict["url"])
        return data


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    list_display = ("name", "kind", "team", "url_label", "is_default")
    list_filter = ("kind", "is_default")
    readonly_fields = ("url_label",)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        channel_save(
            by=request.user,
            channel=obj,
            name=data["name"],
            kind=data["kind"],
            team=data["team"],
            addresses=data["addresses"],
            url=data.get("new_url") or None,
            secret=data.get("new_secret") or None,
            kinds=data["kinds"],
            is_default=data["is_default"],
        )
