"""Explore: pick a period, filters and a grouping; see a chart, a table, and download the CSV. Shareable URLs."""

import datetime as dt

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from finops.core.reporting_period import BOUNDS_ERROR, within_bounds
from finops.reports import charts
from finops.reports.explore_tables import explore_table
from finops.spend.selectors import line_groups
from finops.spend.selectors.explore import (
    DAILY_POINTS_MAX_DAYS,
    GROUP_LABELS,
    LINE_GROUPS,
    UNATTRIBUTED,
    choices,
    daily_points,
    explore_rows,
    labelled_choices,
)
from finops.web.page_cache import cached_page
from finops.web.tables import csv_response

DEFAULT_DAYS = 30
MAX_DAYS = 800
FILTER_NAMES = ("team", "workload", "provider", "account", "model", "basis")
DAY_ERRORS = {"invalid": "Enter a day as YYYY-MM-DD."}


class ExploreForm(forms.Form):
    start = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="First UTC day.",
        error_messages=DAY_ERRORS,
    )
    end = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Day after the last (exclusive).",
        error_messages=DAY_ERRORS,
    )
    group_by = forms.ChoiceField(choices=list(GROUP_LABELS.items()), required=False, initial="provider")
    tag = forms.CharField(
        required=False, max_length=255, label="Tag key", help_text="Grouping by tag: the key, e.g. env."
    )
    team = forms.CharField(required=False)
    workload = forms.CharField(required=False)
    provider = forms.CharField(required=False)
    account = forms.CharField(required=False)
    model = forms.CharField(required=False)
    basis = forms.CharField(required=False)

    def clean(self):
        data = super().clean()
        if "start" in self.errors or "end" in self.errors:
            return data
        today = timezone.now().astimezone(dt.UTC).date()
        data["end"] = data.get("end") or today
        data["start"] = data.get("start") or data["end"] - dt.timedelta(days=DEFAULT_DAYS)
        data["group_by"] = data.get("group_by") or "provider"
        data["tag"] = (data.get("tag") or "").strip()
        if data["end"] <= data["start"]:
            raise forms.ValidationError("The end day must be after the start day (the end is exclusive).")
        if (data["end"] - data["start"]).days > MAX_DAYS:
            raise forms.ValidationError("Pick a period of at most about two years.")
        if not within_bounds(data["start"], data["end"]):
            raise forms.ValidationError(BOUNDS_ERROR)
        if data["group_by"] == "tag" and not data["tag"]:
            self.add_error("tag", "Name the tag key to group by, e.g. env.")
        if data["group_by"] in LINE_GROUPS and line_groups.too_long(data["start"], data["end"]):
            days = (data["end"] - data["start"]).days
            raise forms.ValidationError(
                f"Grouping by {LINE_GROUPS[data['group_by']].lower()} reads the usage lines themselves: pick a period "
                f"of at most {line_groups.MAX_DAYS} days (this one has {days})."
            )
        return data

    def show_period_in_effect(self):
        """Empty day boxes show the default period the page used (the URL stays empty: "the last 30 days")."""
        data = self.data.copy()
        for name in ("start", "end"):
            if not data.get(name) and self.cleaned_data.get(name):
                data[name] = self.cleaned_data[name].isoformat()
        if not data.get("group_by") and "group_by" not in self.errors:
            data["group_by"] = "provider"
        self.data = data

    def error_text(self) -> str:
        """Every error on one line each, for a CSV request (which has no form to show them in)."""
        lines = []
        for name, errors in self.errors.items():
            prefix = (
                ""
                if name == NON_FIELD_ERRORS
                else f"{self.fields[name].label or name.replace('_', ' ').capitalize()}: "
            )
            lines += [f"{prefix}{error}" for error in errors]
        return "\n".join(lines)


@require_safe
@cached_page
def explore(request):
    # An empty query is valid too: the defaults (last 30 days by provider) fill it in.
    form = ExploreForm(request.GET)
    valid = form.is_valid()
    if request.GET.get("csv") and not valid:
        return HttpResponseBadRequest(
            f"Bad Explore query:\n{form.error_text()}\n", content_type="text/plain; charset=utf-8"
        )
    form.show_period_in_effect()
    context = {"form": form, "unattributed": UNATTRIBUTED}
    if valid:
        q = form.cleaned_data
        filters = {name: q[name] for name in FILTER_NAMES}
        table, points = explore_rows(
            user=request.user, start=q["start"], end=q["end"], filters=filters, group_by=q["group_by"], tag_key=q["tag"]
        )
        group_label = GROUP_LABELS[q["group_by"]] if q["group_by"] != "tag" else f"Tag {q['tag']}"
        spec = explore_table(group_label, model=q["group_by"] == "model")
        if request.GET.get("csv"):
            return csv_response(f"explore-{q['group_by']}-{q['start']}-{q['end']}", spec, table)
        daily = daily_points(q["start"], q["end"], q["group_by"])
        context.update(
            table=table,
            spec=spec,
            group_label=group_label,
            chart=charts.stacked_daily(
                points, "group", {}, currency=settings.FINOPS_REPORTING_CURRENCY, monthly=not daily
            ),
            daily_points=daily,
            daily_points_max_days=DAILY_POINTS_MAX_DAYS,
            chart_label="Daily spend" if daily else "Monthly spend",
            known_cost=any(row["cost"] is not None for row in table),
            query=request.GET.urlencode(),
            start=q["start"],
            end=q["end"],
            last_day=q["end"] - dt.timedelta(days=1),
        )
    context["options"] = labelled_choices(choices(request.user))  # the form's lists: not needed for a CSV download
    context["line_groups_max_days"] = line_groups.MAX_DAYS
    return render(request, "finops/explore.html", context)
