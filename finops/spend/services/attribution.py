"""Attribution: usage lines → workload → team, by rules in priority order; the first match wins.

A line's workload depends only on the columns a rule can look at, its *signature* (LineSignature: account,
provider, project, API key, user, model, raw model, tag set). Signatures are stored once, hold the workload
and team, and every line points at its own: ten million lines have a few thousand signatures.
Set-based: a CASE over the rules, compiled by the ORM from `rule_q`, is evaluated over the signature table, and
the signatures that move are updated in one UPDATE; no line is rewritten. The same SQL runs on Postgres and on
the demo's SQLite. Ingestion gives a new signature its workload in Python (`RuleMatcher`, the same decision).
Lines no rule matches have no workload and no team: "unattributed", shown everywhere spend is shown.
A rule change re-attributes all history and brings the rollups in line for exactly the days whose lines moved, and
only the rows of the workloads that lost or gained lines: on Postgres by difference (the moved lines' sums,
subtracted from the old workload's rows and added to the new one's: finops.spend.services.spend_delta), on the
demo's SQLite by rebuilding those rows.
"""

import datetime as dt
import re
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import BigIntegerField, Case, Count, F, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce, TruncDate

from finops.alerts.services.spend_changes import spend_changed
from finops.models import AttributionRule, LineSignature, UsageLine, Workload
from finops.spend.selectors.rules import glob_to_regex, rule_q

from .rollup_rows import day_chunks
from .rollups import rollup_moved, rollup_rebuild
from .spend_delta import signatures_move


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
            (
                rule,
                re.compile(glob_to_regex(rule.model)) if rule.model else None,
                re.compile(glob_to_regex(rule.model), re.IGNORECASE) if rule.model else None,
                {k: str(v) for k, v in rule.tags.items()},
            )
            for rule in (_rules() if rules is None else rules)
        ]
        self._answers: dict[tuple, tuple[int | None, int | None]] = {}

    def match(
        self,
        *,
        account_id: int,
        provider_id: int,
        project: str,
        api_key: str,
        user: str,
        model: str,
        model_raw: str,
        tag_set_id: int,
        tags: dict,
    ) -> tuple[int | None, int | None]:
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


ATTRIBUTION_LOCK = (7302, 0)  # a Postgres advisory lock key (ingest/lease.py uses namespace 7301)


def attribution_lock(*, shared: bool) -> None:
    """Inside a transaction, until it ends: imports hold this lock shared, re-attributions alone.

    An import gives its new signatures the workload the rules it loaded at its start say. A re-attribution
    running beside it cannot see those signatures (not committed yet), so they would keep the old rules'
    answer until the next rule change. So a re-attribution waits for the imports running when it starts, and
    an import waits for a running re-attribution (seconds: 17 s at 10M lines). SQLite (the demo) runs one
    task at a time and needs none.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {'pg_advisory_xact_lock_shared' if shared else 'pg_advisory_xact_lock'}(%s, %s)", ATTRIBUTION_LOCK
        )


def _rules() -> list[AttributionRule]:
    return list(AttributionRule.objects.select_related("workload").order_by("priority", "id"))


def _targets(rules: list[AttributionRule]) -> tuple:
    """CASE expressions giving each signature its first matching rule's workload and that workload's team."""
    if not rules:
        return Value(None, output_field=BigIntegerField()), Value(None, output_field=BigIntegerField())
    workload = Case(
        *[When(rule_q(r), then=Value(r.workload_id)) for r in rules], default=None, output_field=BigIntegerField()
    )
    team = Case(
        *[When(rule_q(r), then=Value(r.workload.team_id)) for r in rules], default=None, output_field=BigIntegerField()
    )
    return workload, team


def _changed(signatures: QuerySet, workload, team) -> QuerySet:
    """Signatures whose workload or team would change. NULL (unattributed) is compared as -1, and the test is
    written as < or > because Django's negation of a nullable column also matches NULL rows."""
    signatures = signatures.annotate(
        cur_w=Coalesce("workload_id", -1),
        new_w=Coalesce(workload, -1),
        cur_t=Coalesce("team_id", -1),
        new_t=Coalesce(team, -1),
    )
    return signatures.filter(
        Q(cur_w__lt=F("new_w")) | Q(cur_w__gt=F("new_w")) | Q(cur_t__lt=F("new_t")) | Q(cur_t__gt=F("new_t"))
    )


@dataclass
class Reattribution:
    days: set[dt.date]
    lines: int
    # Workloads that lost or gained lines (None: unattributed), and their teams before and after.
    workloads: set = field(default_factory=set)
    teams: set = field(default_factory=set)


def _moved_lines(signatures: QuerySet) -> dict[dt.date, int]:
    """Lines per UTC day whose signature is among `signatures`: the days whose rollup a move changes.

    One pass over the lines (a hash semi-join on a few thousand signature ids), reading no line twice."""
    rows = (
        UsageLine.objects.filter(signature_id__in=signatures.values("id"))
        .annotate(day=TruncDate("period_start", tzinfo=dt.UTC))
        .values_list("day")
        .annotate(n=Count("id"))
        .order_by()
    )
    return dict(rows)


def signatures_attribute() -> Reattribution:
    """Give every signature the workload and team of its first matching rule, in set-based SQL (the rules' CASE
    over the signature table: thousands of rows, however many lines). Returns the days and line count of the
    lines that moved, and the workloads that lost or gained them (for the rollup). On Postgres the moved lines'
    sums are kept (finops.spend.services.spend_delta) for `_rollup_moved` to apply."""
    workload, team = _targets(_rules())
    return _signatures_move(_changed(LineSignature.objects.all(), workload, team), workload, team)


def _signatures_move(changed: QuerySet, workload, team) -> Reattribution:
    """Move the signatures of `changed` (annotated by `_changed`) to `workload` and `team` (expressions)."""
    if connection.vendor == "postgresql":
        moved = signatures_move(changed)
        moves, per_day = moved["moves"], moved["per_day"]
    else:
        moves = list(changed.values_list("cur_w", "new_w", "cur_t", "new_t").distinct())
        if not moves:
            return Reattribution(days=set(), lines=0)
        per_day = _moved_lines(changed)
        LineSignature.objects.filter(id__in=changed.values("id")).update(workload_id=workload, team_id=team)
    if not moves:
        return Reattribution(days=set(), lines=0)
    workloads = {None if w == -1 else w for move in moves for w in move[:2]}
    teams = {None if t == -1 else t for move in moves for t in move[2:]}
    return Reattribution(days=set(per_day), lines=sum(per_day.values()), workloads=workloads, teams=teams)


@transaction.atomic
def history_reattribute(*, progress=None) -> Reattribution:
    """After a rule change: re-attribute all history and bring the rollups of exactly the days whose lines
    moved, for the workloads that lost or gained them, in line, in one transaction (pages never see lines and
    rollup disagree). `progress(done, total)` is called as each run of consecutive days is rebuilt."""
    attribution_lock(shared=False)
    result = signatures_attribute()
    _rollup_moved(result, progress)
    return result


def _rollup_moved(result: Reattribution, progress=None) -> None:
    """The rollups after signatures moved. Postgres: spend by difference (the moved lines' sums kept by
    `signatures_move`: proportional to the lines that moved, not to the lines of their days), then the performance
    rollup regrouped from its signature-day rows. SQLite (the demo): the moved workloads' rows rebuilt."""
    if not result.days:
        return
    if connection.vendor != "postgresql":
        _rebuild(result.days, result.workloads, progress)
        return
    rollup_moved(days=result.days, workload_ids=result.workloads)
    if progress is not None:
        progress(1, 1)


def _rebuild(days: set[dt.date], workloads: set, progress=None) -> None:
    chunks = day_chunks(days)
    for done, (first, last) in enumerate(chunks, start=1):
        chunk = {first + dt.timedelta(days=n) for n in range((last - first).days + 1)}
        # Signatures moved, no line was written: the performance rollup regroups its signature-day rows.
        rollup_rebuild(days=chunk, workload_ids=workloads, lines_written=False)
        if progress is not None:
            progress(done, len(chunks))


@transaction.atomic
def workload_team_sync(*, workload: Workload) -> Reattribution:
    """A workload moved to another team: its signatures (and so its lines) follow, and the rollup of their
    days is rebuilt. Returns the days, the workload and both teams (the old ones its lines had, the new one).
    Signals nothing: its callers do, once per operation (`workload_team_move`, config apply)."""
    attribution_lock(shared=False)
    stale = LineSignature.objects.filter(workload=workload).exclude(team_id=workload.team_id)
    old_teams = set(stale.values_list("team_id", flat=True).distinct())
    team = Value(workload.team_id, output_field=BigIntegerField())
    result = _signatures_move(_changed(stale, F("workload_id"), team), F("workload_id"), team)
    _rollup_moved(result)
    return Reattribution(
        days=result.days, lines=result.lines, workloads={workload.id}, teams=old_teams | {workload.team_id}
    )


@transaction.atomic
def workload_team_move(*, workload: Workload, team) -> Reattribution:
    """Move a workload to another team (the admin; config apply does the same through `workload_team_sync`
    and signals once for its whole apply): its history follows, and spend changed for both teams."""
    previous_team_id = Workload.objects.filter(pk=workload.pk).values_list("team_id", flat=True).first()
    workload.team = team
    workload.save()
    result = workload_team_sync(workload=workload)
    spend_changed(
        days=result.days,
        reason="workload moved",
        workload_ids=result.workloads,
        team_ids=result.teams | {previous_team_id},
    )
    return result
