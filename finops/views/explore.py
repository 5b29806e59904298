"""Explore: pick a period, filters and a grouping; see a chart, a table, and download the CSV. Shareable URLs."""

import datetime as dt

from django import forms
from django.conf import settings
from django.shortcuts import render
from django.utils import timezone

from finops import charts
from finops.selectors.explore import DAILY_POINTS_MAX_DAYS, GROUPS, UNATTRIBUTED, choices, daily_points, explore_rows

from .tables import csv_response

DEFAULT_DAYS = 30


class ExploreForm(forms.Form):
    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), help_text="First UTC day.")
    end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), help_text="Day after the last (exclusive).")
    group_by = forms.ChoiceField(choices=[(k, label) for k, (_, label) in GROUPS.items()], required=False, initial="provider")
    team = forms.CharField(required=False)
    workload = forms.CharField(required=False)
    provider = forms.CharField(required=False)
    account = forms.CharField(required=False)
    model = forms.CharField(required=False)
    basis = forms.CharField(required=False)

    def clean(self):
        data = super().clean()
        today = timezone.now().astimezone(dt.UTC).date()
        data["end"] = data.get("end") or today
        data["start"] = data.get("start") or data["end"] - dt.timedelta(days=DEFAULT_DAYS)
        data["group_by"] = data.get("group_by") or "provider"
        if data["end"] <= data["start"]:
            raise forms.ValidationError("The end day must be after the start day (the end is exclusive).")
        if (data["end"] - data["start"]).days > 800:
            raise forms.ValidationError("Pick a period of at most about two years.")
        return data


def explore(request):
    # An empty query is valid too: the defaults (last 30 days by provider) fill it in.
    form = ExploreForm(request.GET)
    context = {"form": form, "unattributed": UNATTRIBUTED}
    if form.is_valid():
        q = form.cleaned_data
        filters = {name: q[name] for name in ("team", "workload", "provider", "account", "model", "basis")}
        table, points = explore_rows(user=request.user, start=q["start"], end=q["end"], filters=filters, group_by=q["group_by"])
        daily = daily_points(q["start"], q["end"], q["group_by"])
        if request.GET.get("csv"):
            label = GROUPS[q["group_by"]][1]
            columns = [(label, "label"), ("Spend", "cost"), ("Tokens", "tokens"), ("Requests", "requests"), ("USD per M tokens", "usd_per_mtok")]
            return csv_response(f"explore-{q['group_by']}-{q['start']}-{q['end']}", columns, table)
        context.update(
            table=table,
            group_label=GROUPS[q["group_by"]][1],
            chart=charts.stacked_daily(points, "group", {}, currency=settings.FINOPS_REPORTING_CURRENCY),
            daily_points=daily,
            daily_points_max_days=DAILY_POINTS_MAX_DAYS,
            chart_label="Daily spend" if daily else "Monthly spend",
            query=request.GET.urlencode(),
            start=q["start"],
            end=q["end"],
        )
    context["options"] = choices(request.user)  # the form's lists: not needed for a CSV download
    return render(request, "finops/explore.html", context)
