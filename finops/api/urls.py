from django.contrib.auth.decorators import login_not_required
from django.urls import path

from finops.alerts.api import caps, channels
from finops.contracts import api as contracts
from finops.org import api as org
from finops.performance.api import evals, metrics, outcomes, scorecard
from finops.sources import api as sources
from finops.spend.api import focus, rules, spend
from finops.whatif import api as whatif_api

# DRF authenticates API requests itself (token or session); the login redirect is for pages only.
api = login_not_required

urlpatterns = [
    path("me", api(org.MeView.as_view()), name="api-me"),
    path("spend", api(spend.SpendView.as_view()), name="api-spend"),
    path("providers", api(sources.ProviderList.as_view()), name="api-provider-list"),
    path("teams", api(org.TeamList.as_view()), name="api-team-list"),
    path("teams/<slug:slug>", api(org.TeamDetail.as_view()), name="api-team-detail"),
    path("workloads", api(org.WorkloadList.as_view()), name="api-workload-list"),
    path("workloads/<slug:slug>", api(org.WorkloadDetail.as_view()), name="api-workload-detail"),
    path(
        "workloads/<slug:slug>/cost-per-outcome",
        api(outcomes.WorkloadCostPerOutcome.as_view()),
        name="api-workload-cost-per-outcome",
    ),
    path("accounts", api(sources.AccountList.as_view()), name="api-account-list"),
    path("accounts/<int:pk>", api(sources.AccountDetail.as_view()), name="api-account-detail"),
    path("accounts/<int:pk>/runs", api(sources.AccountRunList.as_view()), name="api-account-runs"),
    path("accounts/<int:pk>/imports", api(sources.AccountImportCreate.as_view()), name="api-account-imports"),
    path("accounts/<int:pk>/syncs", api(sources.AccountSyncCreate.as_view()), name="api-account-syncs"),
    path("runs/<int:pk>", api(sources.RunDetail.as_view()), name="api-run-detail"),
    path("rules", api(rules.RuleList.as_view()), name="api-rule-list"),
    path("rules/preview", api(rules.RulePreview.as_view()), name="api-rule-preview"),
    path("rules/<int:pk>", api(rules.RuleDetail.as_view()), name="api-rule-detail"),
    path("caps", api(caps.CapList.as_view()), name="api-cap-list"),
    path("caps/<int:pk>", api(caps.CapDetail.as_view()), name="api-cap-detail"),
    path("channels", api(channels.ChannelList.as_view()), name="api-channel-list"),
    path("channels/<int:pk>", api(channels.ChannelDetail.as_view()), name="api-channel-detail"),
    path("contracts", api(contracts.ContractList.as_view()), name="api-contract-list"),
    path("contracts/renewals", api(contracts.ContractRenewals.as_view()), name="api-contract-renewals"),
    path("contracts/focus.csv", api(contracts.ContractFocusCSV.as_view()), name="api-contract-focus"),
    path("contracts/<int:pk>", api(contracts.ContractDetail.as_view()), name="api-contract-detail"),
    path("contracts/<int:pk>/renew", api(contracts.ContractRenew.as_view()), name="api-contract-renew"),
    path("focus", api(focus.UsageFocusCSV.as_view()), name="api-focus"),
    path("outcomes", api(outcomes.OutcomeList.as_view()), name="api-outcome-list"),
    path("metrics", api(metrics.MetricList.as_view()), name="api-metric-list"),
    path("evals", api(evals.EvalList.as_view()), name="api-eval-list"),
    path("scorecard", api(scorecard.ScorecardView.as_view()), name="api-scorecard"),
    path("whatif", api(whatif_api.WhatIfView.as_view()), name="api-whatif"),
    path("reattributions/<int:pk>", api(rules.ReattributionJobDetail.as_view()), name="api-reattribution"),
]
