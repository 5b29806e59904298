"""Attribution: usage lines → workload → team, by rules in priority order; the first match wins.

Set-based: a CASE over the rules, compiled by the ORM from `rule_q`, gives each line its workload.
On Postgres the CASE runs once per distinct *signature* (the columns a rule can look at), not once per line:
ten million lines have a few thousand signatures, and a CASE of hundreds of rules per line costs minutes.
The signatures' targets then update the lines in one UPDATE … FROM join. SQLite (the demo) keeps the
plain UPDATE with the CASE per line. Both give the same result: a line's workload depends on its signature only.
Lines no rule matches have no workload and no team: "unattributed", shown everywhere spend is shown.
A rule change re-attributes all history and rebuilds the rollup for exactly the days whose lines changed
(on Postgres, only the rows of the workloads that lost or gained lines).
"""

import datetime as dt
import re
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import BigIntegerField, Case, F, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce, TruncDate

from finops.models import AttributionRule, TagSet, UsageLine, Workload

from .rollups import day_chunks, rollup_rebuild


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
    # A rule without conditions is a catch-all (SQL needs a condition that is always true; it names a
    # signature column, so it also holds where the CASE is evaluated over signatures).
    return q or Q(account_id__isnull=False)


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
    # Workloads that lost or gained lines (None: unattributed); None when not known (all may have).
    workloads: set | None = None


# Every column `rule_q` may look at: lines equal on these are attributed alike.
SIGNATURE = ("account_id", "provider_id", "project_ref", "api_key_ref", "user_ref", "model", "model_raw", "tag_set_id")


def _attribute_by_signature(lines: QuerySet, rules: list[AttributionRule]) -> Reattribution:
    """Postgres: the CASE over the distinct signatures of `lines`, joined back to the lines in one UPDATE.

    The CASE is compiled by the ORM against the usage-line table, and evaluated over a subquery aliased with
    that table's name, whose columns are the signature: so it is the very expression `rule_q` defines.
    Current workload and team are part of the distinct key, so only groups that change are joined back.
    The CTEs are MATERIALIZED: inlined, the planner evaluates the CASE after the join, once per line again.
    """
    nullable = [c for c in SIGNATURE if UsageLine._meta.get_field(c).null]
    if nullable:  # the join back is a plain equality (hashable); NULL = NULL would silently match nothing
        raise RuntimeError(f"attribution signature columns must be NOT NULL (or be compared with COALESCE): {nullable}")
    workload, _ = _targets(rules)
    table = connection.ops.quote_name(UsageLine._meta.db_table)
    query = UsageLine.objects.all().query
    case_sql, case_params = workload.resolve_expression(query).as_sql(query.get_compiler(connection=connection), connection)
    distinct = lines.annotate(cur_w=Coalesce("workload_id", -1), cur_t=Coalesce("team_id", -1)).values(*SIGNATURE, "cur_w", "cur_t")
    distinct_sql, distinct_params = distinct.distinct().order_by().query.sql_with_params()
    sig = ", ".join(f"{table}.{connection.ops.quote_name(c)}" for c in (*SIGNATURE, "cur_w", "cur_t"))
    join = " AND ".join(f"u.{connection.ops.quote_name(c)} = c.{connection.ops.quote_name(c)}" for c in SIGNATURE)
    scope_sql, scope_params = ("", [])
    if lines.query.where:
        ids_sql, ids_params = lines.values("id").order_by().query.sql_with_params()
        scope_sql, scope_params = f" AND u.id IN ({ids_sql})", list(ids_params)
    sql = f"""
        WITH target AS MATERIALIZED (
            SELECT {sig}, w.id AS new_w, w.team_id AS new_t
            FROM ({distinct_sql}) AS {table} LEFT JOIN {connection.ops.quote_name(Workload._meta.db_table)} w ON w.id = ({case_sql})
        ), changed AS MATERIALIZED (
            SELECT * FROM target WHERE cur_w <> COALESCE(new_w, -1) OR cur_t <> COALESCE(new_t, -1)
        ), moved AS (
            UPDATE {table} AS u SET workload_id = c.new_w, team_id = c.new_t FROM changed c
            WHERE {join} AND COALESCE(u.workload_id, -1) = c.cur_w AND COALESCE(u.team_id, -1) = c.cur_t{scope_sql}
            RETURNING (u.period_start AT TIME ZONE 'UTC')::date AS day
        )
        SELECT day, count(*), NULL::bigint[] FROM moved GROUP BY day
        UNION ALL
        SELECT NULL, NULL, array_agg(DISTINCT w) FROM (SELECT cur_w FROM changed UNION SELECT COALESCE(new_w, -1) FROM changed) AS x (w)"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [*distinct_params, *case_params, *scope_params])
        rows = cursor.fetchall()
    touched = next((ids for day, _, ids in rows if day is None), None) or []
    days = {day: n for day, n, _ in rows if day is not None}
    # `changed` may name a workload whose lines lie outside the scope: rebuilding its rows too is harmless.
    return Reattribution(days=set(days), lines=sum(days.values()),
                         workloads={None if w == -1 else w for w in touched} if days else set())


def lines_attribute(*, lines: QuerySet) -> Reattribution:
    """Attribute `lines` by the current rules; returns the UTC days whose lines changed (for the rollup)."""
    if connection.vendor == "postgresql":
        return _attribute_by_signature(lines, _rules())
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
    chunks = day_chunks(result.days)
    for done, (first, last) in enumerate(chunks, start=1):
        days = {first + dt.timedelta(days=n) for n in range((last - first).days + 1)}
        rollup_rebuild(days=days, workload_ids=result.workloads)
        if progress is not None:
            progress(done, len(chunks))
    return result


@transaction.atomic
def workload_team_sync(*, workload: Workload) -> set[dt.date]:
    """A workload moved to another team: its lines follow, and the rollup of their days is rebuilt."""
    stale = UsageLine.objects.filter(workload=workload).exclude(team_id=workload.team_id)
    days = set(stale.annotate(day=TruncDate("period_start")).values_list("day", flat=True).distinct())
    stale.update(team_id=workload.team_id)
    rollup_rebuild(days=days)
    return days
