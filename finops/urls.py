from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required, login_required
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.decorators.http import require_safe
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from finops.alerts.views import alerts, caps, channels
from finops.contracts import views as contracts
from finops.org.views import audit, tokens
from finops.performance.views import outcomes, scorecard
from finops.reports.views import reports
from finops.reports.views import subscriptions as report_subscriptions
from finops.sources import views as sources
from finops.spend.views import explore, focus, pages, providers, rules, unattributed
from finops.web import health
from finops.whatif import views as whatif

urlpatterns = [
    path("", pages.overview, name="overview"),
    path("teams/", pages.team_list, name="team-list"),
    path("teams/<slug:slug>/", pages.team_detail, name="team-detail"),
    path("workloads/", pages.workload_list, name="workload-list"),
    path("workloads/<slug:slug>/", pages.workload_detail, name="workload-detail"),
    path("workloads/<slug:slug>/outcomes/", outcomes.workload_outcomes_upload, name="workload-outcomes-upload"),
    path("providers/", providers.provider_list, name="provider-list"),
    path("providers/<slug:slug>/", providers.provider_detail, name="provider-detail"),
    path("sources/", sources.source_list, name="source-list"),
    path("sources/upload/", sources.source_upload, name="source-upload"),
    path("sources/new/", sources.source_create, name="source-create"),
    path("sources/<int:pk>/", sources.source_detail, name="source-detail"),
    path("sources/<int:pk>/sync/", sources.source_sync, name="source-sync"),
    path("sources/<int:pk>/edit/", sources.source_edit, name="source-edit"),
    path("sources/<int:pk>/focus-services/", sources.source_focus_services, name="source-focus-services"),
    path("sources/<int:pk>/test/", sources.source_test, name="source-test"),
    path("caps/", caps.cap_list, name="cap-list"),
    path("caps/new/", caps.cap_create, name="cap-create"),
    path("caps/<int:pk>/", caps.cap_detail, name="cap-detail"),
    path("caps/<int:pk>/edit/", caps.cap_edit, name="cap-edit"),
    path("caps/<int:pk>/delete/", caps.cap_delete, name="cap-delete"),
    path("contracts/", contracts.contract_list, name="contract-list"),
    path("contracts/new/", contracts.contract_create, name="contract-create"),
    path("contracts/<int:pk>/", contracts.contract_detail, name="contract-detail"),
    path("contracts/<int:pk>/edit/", contracts.contract_edit, name="contract-edit"),
    path("explore/", explore.explore, name="explore"),
    path("unattributed/", unattributed.unattributed, name="unattributed"),
    path("rules/", rules.rule_list, name="rule-list"),
    path("rules/new/", rules.rule_edit, name="rule-create"),
    path("rules/<int:pk>/", rules.rule_edit, name="rule-edit"),
    path("rules/<int:pk>/delete/", rules.rule_delete, name="rule-delete"),
    path("rules/<int:pk>/move/<str:direction>/", rules.rule_move, name="rule-move"),
    path("rules/jobs/<int:pk>/", rules.job_status, name="rule-job"),
    path("alerts/", alerts.alert_list, name="alert-list"),
    path("scorecard/", scorecard.scorecard_page, name="scorecard"),
    # The report's email subscriptions and the email's unsubscribe link, before reports/<month>/ (which would take
    # them).
    path("reports/subscriptions/", report_subscriptions.subscription_list, name="report-subscriptions"),
    path(
        "reports/subscriptions/<int:pk>/email/",
        report_subscriptions.subscription_email,
        name="report-subscription-email",
    ),
    path(
        "reports/subscriptions/<int:pk>/email.html",
        report_subscriptions.subscription_email_html,
        name="report-subscription-email-html",
    ),
    path("reports/unsubscribe/<str:token>/", report_subscriptions.unsubscribe, name="report-unsubscribe"),
    path("reports/", reports.report_index, name="report-index"),
    path("reports/<str:month>/", reports.report_page, name="report-month"),
    path("reports/<str:month>/report.<str:kind>", reports.report_file, name="report-file"),
    path("reports/<str:month>/publish", reports.report_publish_view, name="report-publish"),
    path("reports/<str:month>/focus.csv", focus.focus_export, name="report-focus"),
    path("alerts/mute/", alerts.alert_mute, name="alert-mute"),
    path("alerts/channels/", channels.channel_list, name="channel-list"),
    # The demo app's pages (its Slack stand-in), included by name: the product imports nothing of the demo.
    path("demo/", include("demo.urls")),
    path("alerts/channels/<int:pk>/test/", channels.channel_test, name="channel-test"),
    path("alerts/channels/new/", channels.channel_create, name="channel-create"),
    path("alerts/channels/<int:pk>/edit/", channels.channel_edit, name="channel-edit"),
    path("alerts/channels/<int:pk>/delete/", channels.channel_remove, name="channel-delete"),
    path("whatif/", whatif.whatif_page, name="whatif"),
    path("offerings/", whatif.offering_list, name="offering-list"),
    path("offerings/new/", whatif.offering_create, name="offering-create"),
    path("offerings/<int:pk>/edit/", whatif.offering_edit, name="offering-edit"),
    path("savings/", whatif.savings_page, name="savings"),
    path("savings/litellm-router.yaml", whatif.routing_export, name="routing-export"),
    path("tokens/", tokens.token_list, name="token-list"),
    path("tokens/<int:pk>/revoke/", tokens.token_revoke, name="token-revoke"),
    path("audit/", audit.audit_log, name="audit-log"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("health/", health.health, name="health"),
    path("healthz", health.healthz, name="healthz"),
    # Browsers ask for /favicon.ico whatever a page links; the SVG's URL is resolved on first use (after collectstatic).
    path(
        "favicon.ico",
        login_not_required(require_safe(RedirectView.as_view(url=lazy(static, str)("finops/favicon.svg")))),
        name="favicon",
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include("finops.api.urls")),
    path("api/schema/", login_not_required(SpectacularAPIView.as_view()), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file (?script), not inline: the CSP forbids inline
    # scripts.
    # The docs are pages: an anonymous visitor is sent to the login page (DRF views would answer 401), then back.
    path("api/docs/", login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema")), name="api-docs"),
    # Redoc runs its search in a blob: worker.
    path(
        "api/redoc/",
        login_required(
            csp_update({"script-src": ["blob:"], "worker-src": ["blob:"]})(
                SpectacularRedocView.as_view(url_name="api-schema")
            )
        ),
        name="api-redoc",
    ),
]
