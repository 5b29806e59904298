"""Any sequence of imports and rule changes keeps three promises (issue 4, docs/architecture.md invariant 7):
the rollup equals the raw lines, the monthly rollup equals the daily one summed by month, and every line
belongs to the first rule that matches it (or to none)."""

import fnmatch
import io

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from finops.models import (
    Account,
    AttributionRule,
    DailySpend,
    MonthlySpend,
    Provider,
    Team,
    TeamDailySpend,
    UsageLine,
    Workload,
)
from finops.spend.services.attribution import history_reattribute, workload_team_sync
from ingest.services import usage_file_import
from tests.rollup_check import assert_monthly_equals_daily, raw_groups, rollup_groups

DAYS = ["2026-09-30", "2026-10-01", "2026-10-02", "2026-10-31", "2026-11-01"]  # three months, their boundaries
MODELS = ["gpt-5", "gpt-5-mini", "gpt-4o", "claude-sonnet-4-5"]
PROJECTS = ["alpha", "beta", ""]
ENVS = ["prod", "staging"]
GLOBS = ["gpt-5*", "gpt-*", "claude-*", "*mini"]

# A row with no tokens and no cost is not usage: replacing a stored day with it is refused as an unreadable row
# (tests/ingest/test_unreadable_rows.py holds that), so the machine's files carry something on every row.
line = st.tuples(
    st.sampled_from(DAYS),
    st.sampled_from(MODELS),
    st.sampled_from(PROJECTS),
    st.sampled_from(ENVS),
    st.integers(0, 10_000),
    st.integers(0, 1_000),
    st.sampled_from(["", "1.25", "0.5", "3"]),
).filter(lambda row: row[4] or row[5] or row[6])
condition = st.one_of(
    st.builds(dict, project=st.sampled_from(["alpha", "beta"])),
    st.builds(dict, model=st.sampled_from(GLOBS)),
    st.builds(lambda env: {"tags": {"env": env}}, st.sampled_from(ENVS)),
    st.builds(lambda p, g: {"project": p, "model": g}, st.sampled_from(["alpha", "beta"]), st.sampled_from(GLOBS)),
)


def first_match(line: UsageLine, rules: list[AttributionRule]):
    """The oracle: the rules in order, evaluated in Python."""
    for r in rules:
        if r.project and line.project_ref != r.project:
            continue
        if r.model and not (
            fnmatch.fnmatchcase(line.model, r.model.lower())
            or fnmatch.fnmatchcase(line.model_raw.lower(), r.model.lower())
        ):
            continue
        if any(line.tags.get(k) != v for k, v in r.tags.items()):
            continue
        return r.workload_id
    return None


class AttributionMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        UsageLine.objects.all().delete()
        DailySpend.objects.all().delete()
        MonthlySpend.objects.all().delete()
        TeamDailySpend.objects.all().delete()
        AttributionRule.objects.all().delete()
        Workload.objects.all().delete()
        Account.objects.all().delete()
        Team.objects.all().delete()
        # What the run writes is rolled back to here in teardown (hypothesis calls it after every run, pass or
        # fail): the next run's deletes above find nothing, where they collected and deleted a whole run's
        # accounts, lines, signatures, rollups, rules, workloads and teams one relation at a time.
        self.undo = transaction.atomic()
        self.undo.__enter__()
        self.teams = [Team.objects.create(name=f"T{i}", slug=f"t{i}") for i in range(2)]
        self.workloads = [Workload.objects.create(team=self.teams[i % 2], name=f"W{i}", slug=f"w{i}") for i in range(3)]
        self.account = Account.objects.create(
            name="acct", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
        )
        self.priority = 0

    def teardown(self):
        transaction.set_rollback(True)
        self.undo.__exit__(None, None, None)

    @rule(lines=st.lists(line, min_size=1, max_size=8))
    def import_a_file(self, lines):
        text = "day,model,input_tokens,output_tokens,cost,project,tags\n" + "".join(
            f"{d},{m},{i},{o},{c},{p},env={e}\n" for d, m, p, e, i, o, c in lines
        )
        run = usage_file_import(account=self.account, stream=io.BytesIO(text.encode()), file_name="f.csv")
        assert run.status == "succeeded", run.error

    @rule(cond=condition, workload=st.integers(0, 2), priority=st.integers(0, 30))
    def add_a_rule(self, cond, workload, priority):
        AttributionRule.objects.create(workload=self.workloads[workload], priority=priority, **cond)
        history_reattribute()

    @rule(data=st.data())
    def edit_a_rule(self, data):
        rules = list(AttributionRule.objects.all())
        if not rules:
            return
        target = data.draw(st.sampled_from(rules))
        target.priority = data.draw(st.integers(0, 30))
        target.workload = self.workloads[data.draw(st.integers(0, 2))]
        target.save()
        history_reattribute()

    @rule(data=st.data())
    def delete_a_rule(self, data):
        rules = list(AttributionRule.objects.all())
        if rules:
            data.draw(st.sampled_from(rules)).delete()
            history_reattribute()

    @rule(workload=st.integers(0, 2))
    def move_a_workload_to_the_other_team(self, workload):
        moved = self.workloads[workload]
        moved.team = self.teams[1] if moved.team_id == self.teams[0].id else self.teams[0]
        moved.save()
        workload_team_sync(workload=moved)

    @invariant()
    def every_line_belongs_to_its_first_matching_rule(self):
        rules = list(AttributionRule.objects.order_by("priority", "id"))
        teams = dict(Workload.objects.values_list("id", "team_id"))
        for each in UsageLine.objects.select_related("signature", "tag_set"):
            expected = first_match(each, rules)
            assert each.signature.workload_id == expected, (each.model, each.project_ref, each.tags)
            assert each.signature.team_id == (teams[expected] if expected else None)

    @invariant()
    def the_rollup_equals_the_raw_lines(self):
        assert rollup_groups() == raw_groups()

    @invariant()
    def the_monthly_rollup_equals_the_daily_one_by_month(self):
        assert_monthly_equals_daily()


@pytest.mark.django_db
def test_attribution_and_rollups_hold_after_any_sequence_of_imports_and_rule_changes():
    run_state_machine_as_test(
        AttributionMachine,
        settings=settings(
            max_examples=25, stateful_step_count=12, deadline=None, suppress_health_check=list(HealthCheck)
        ),
    )
