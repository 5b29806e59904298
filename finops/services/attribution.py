"""Attribution: usage lines → workload → team, by rules in priority order; the first match wins.

Set-based: one UPDATE per scope with a CASE over the rules, compiled by the ORM (Postgres and SQLite).
Lines no rule matches have no workload and no team: "unattributed", shown everywhere spend is shown.
A rule change re-attributes all history and rebuilds the rollup for exactly the days whose lines changed.
"""

import datetime as dt
import re
from dataclasses import dataclass

from django.db import transaction
from django.db.models import BigIntegerField, Case, F, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce, TruncDate

from finops.models import AttributionRule, TagSet, UsageLine, Workload

from .rollups import day_ranges, rollup_rebuild


def glob_to_regex(pattern: str) -> str:
    """`gpt-5*` → `^gpt\\-5.*$`: * is any run of characters, ? one character; case-insensitive by lower-casing."""
    parts = [".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern.lower()]
    return "^" + "".join(parts) + "$"


def rule_q(rule: AttributionRule) -> Q:
    """The lines a rule matches, on its own (priority is applied by the CASE order)."""
    q = Q()
    if rule.account_id:
        q &= Q(account_id=rule.account_id)
    if rule.provider_id:
        q &= Q(provider_id=rule.provider_id)
    if rule.project:
        q &= Q(project_ref=rule.project)
    if rule.api_key:
        q &= Q(api_key_ref=rule.api_key)
    if rule.user:
        q &= Q(user_ref=rule.user)
    if rule.model:
        # Normalised ids are lower-case; the raw string is tried too, so a rule can name a dated snapshot.
        regex = glob_to_regex(rule.model)
        q &= Q(model__regex=regex) | Q(model_raw__iregex=regex)
    if rule.tags:
        # Tag sets are stored once (TagSet); a subquery keeps the condition join-free, so it also works in UPDATE.
        q &= Q(tag_set_id__in=TagSet.objects.filter(**{f"tags__{k}": str(v) for k, v in rule.tags.items()}).values("id"))
    # A rule without conditions is a catch-all (SQL needs a condition that is always true).
    return q or Q(pk__isnull=False)


class RuleMatcher:
    """The same first-match decision as `rule_q` + CASE, in Python, for lines about to be written.

    Ingestion attributes each line before it is stored, so an import never rewrites its own lines (an UPDATE of
    a million fresh lines costs more than their COPY). Lines repeat a few thousand attribute combinations, so
    the answer is cached per combination (bounded). tests/test_attribution_state_machine.py holds both paths
    to one oracle.
    """

    CACHE_LIMIT = 65536

    def __init__(self, rules: list[AttributionRule] | None = None):
        self.rules = [
            (rule, re.compile(glob_to_regex(rule.model)) if rule.model else None,
             re.compile(glob_to_regex(rule.model), re.IGNORECASE) if rule.model else None,
             {k: str(v) for k, v in rule.tags.items()})
            for rule in (_rules() if rules is None else rules)
        ]
        self._answers: dict[tuple, tuple[int | None, int | None]] = {}

    def match(self, *, account_id: int, provider_id: int, project: str, api_key: str, user: str, model: str,
              model_raw: str, tag_set_id: int, tags: dict) -> tuple[int | None, int | None]:
        """(workload_id, team_id) of the first matching rule, or (None, None): unattributed."""
        key = (account_id, provider_id, project, api_key, user, model, model_raw, tag_set_id)
        try:
            return self._answers[key]
        except KeyError:
            pass
        answer = (None, None)
        for rule, model_re, model_raw_re, rule_tags in self.rules:
            if (
                (rule.account_id and rule.account_id != account_id)
                or (rule.provider_id and rule.provider_id != provider_id)
                or (rule.project and rule.project != project)
                or (rule.api_key and rule.api_key != api_key)
                or (rule.user and rule.user != user)
                or (model_re and not (model_re.search(model) or model_raw_re.search(model_raw)))
                or any(tags.get(k) != v for k, v in rule_tags.items())
            ):
                continue
            answer = (rule.workload_id, rule.workload.team_id)
            break
        if len(self._answers) >= self.CACHE_LIMIT:
            self._answers.clear()
        self._answers[key] = answer
        return answer


def _rules() -> list[AttributionRule]:
    return list(AttributionRule.objects.select_related("workload").order_by("priority", "id"))


def _targets(rules: list[AttributionRule]) -> tuple:
    """CASE expressions giving each line its first matching rule's workload and that workload's team."""
    if not rules:
        return Value(None, output_field=BigIntegerField()), Value(None, output_field=BigIntegerField())
    workload = Case(*[When(rule_q(r), then=Value(r.workload_id)) for r in rules], default=None, output_field=BigIntegerField())
    team = Case(*[When(rule_q(r), then=Value(r.workload.team_id)) for r in rules], default=None, output_field=BigIntegerField())
    return workload, team


def _changed(lines: QuerySet, workload, team) -> QuerySet:
    """Lines whose workload or team would change. NULL (unattributed) is compared as -1, and the test is
    written as < or > because Django's negation of a nullable column also matches NULL rows."""
    lines = lines.annotate(
        cur_w=Coalesce("workload_id", -1), new_w=Coalesce(workload, -1), cur_t=Coalesce("team_id", -1), new_t=Coalesce(team, -1)
    )
    return lines.filter(Q(cur_w__lt=F("new_w")) | Q(cur_w__gt=F("new_w")) | Q(cur_t__lt=F("new_t")) | Q(cur_t__gt=F("new_t")))


@dataclass
class Reattribution:
    days: set[dt.date]
    lines: int


def lines_attribute(*, lines: QuerySet) -> Reattribution:
    """Attribute `lines` by the current rules; returns the UTC days whose lines changed (for the rollup)."""
    workload, team = _targets(_rules())
    changed = _changed(lines, workload, team)
    days = set(changed.annotate(day=TruncDate("period_start")).values_list("day", flat=True).distinct())
    count = UsageLine.objects.filter(id__in=changed.values("id")).update(workload_id=workload, team_id=team) if days else 0
    return Reattribution(days=days, lines=count)


@transaction.atomic
def history_reattribute(*, progress=None) -> Reattribution:
    """After a rule change: re-attribute every line and rebuild the rollup of exactly the days that changed,
    in one transaction (pages never see lines and rollup disagree). `progress(done, total)` is called as
    each run of consecutive days is rebuilt."""
    result = lines_attribute(lines=UsageLine.objects.all())
    ranges = day_ranges(result.days)
    for done, (first, last) in enumerate(ranges, start=1):
        rollup_rebuild(days={first + dt.timedelta(days=n) for n in range((last - first).days + 1)})
        if progress is not None:
            progress(done, len(ranges))
    return result


@transaction.atomic
def workload_team_sync(*, workload: Workload) -> set[dt.date]:
    """A workload moved to another team: its lines follow, and the rollup of their days is rebuilt."""
    stale = UsageLine.objects.filter(workload=workload).exclude(team_id=workload.team_id)
    days = set(stale.annotate(day=TruncDate("period_start")).values_list("day", flat=True).distinct())
    stale.update(team_id=workload.team_id)
    rollup_rebuild(days=days)
    return days
