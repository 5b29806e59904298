"""Every path that changes spend says so once, after commit, with the days and scopes it rebuilt, and that signal
evaluates the caps (docs/architecture.md data flow: the one "spend changed" signal; issue 10).

Transactional tests: the signal is sent by an on_commit callback, which only a real commit runs.
"""

import datetime as dt
import io
import threading
from decimal import Decimal

import pytest
from celery.signals import task_prerun
from django.db import connection, transaction
from django.urls import reverse

from finops.alerts.services.spend_changes import SpendChange
from finops.config import config_apply
from finops.models import Account, AlertEvent, AttributionRule, Cap, Provider, Team, Workload
from finops.sources.services.accounts import account_set_credentials
from finops.spend.services.attribution import ATTRIBUTION_LOCK, workload_team_move
from finops.spend.services.rules import rule_create
from finops.tasks import evaluate_alerts
from ingest.services import account_sync, usage_file_import
from tests.clock import holding
from tests.conftest import stored_cap
from tests.fakes.provider_server import Reply
from tests.ingest.test_openai_api import COSTS, SECRET, cursor_pages, load

TODAY = dt.datetime.now(dt.UTC).date()
_held_on_today = holding(TODAY)
HEADER = "day,model,input_tokens,output_tokens,cost,project\n"


def csv_of(*lines: tuple[dt.date, str, str]) -> bytes:
    """(day, cost, project) lines of a usage CSV."""
    return (
        HEADER + "".join(f"{day.isoformat()},gpt-5-mini,1000,100,{cost},{project}\n" for day, cost, project in lines)
    ).encode()


def import_csv(account: Account, data: bytes, name: str = "usage.csv"):
    return usage_file_import(account=account, stream=io.BytesIO(data), file_name=name)


def team_cap(team: Team, amount: str = "10") -> Cap:
    return stored_cap(
        name=f"{team.name} monthly", scope="team", team=team, amount=Decimal(amount), recipients=["ops@example.com"]
    )


def cap_events(cap: Cap) -> set[int]:
    return set(AlertEvent.objects.filter(cap=cap, kind="cap_threshold").values_list("threshold", flat=True))


# The evaluations the signal queued, as the task received them: recorded from Celery's own task_prerun signal
# (tasks run inline here), so the tests observe the queued task itself rather than a hook kept for them.
queued: list[SpendChange] = []


def _record_evaluation(sender=None, kwargs=None, **_):
    if sender is not None and sender.name == evaluate_alerts.name:
        queued.append(SpendChange.from_task_kwargs(**kwargs))


@pytest.fixture(autouse=True)
def nothing_queued_yet():
    queued.clear()
    task_prerun.connect(_record_evaluation)
    yield
    task_prerun.disconnect(_record_evaluation)
    queued.clear()


@pytest.fixture
def account(reseeded):
    return Account.objects.create(
        name="openai-prod", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )


@pytest.fixture
def support(reseeded):
    return Team.objects.create(name="Support Platform", slug="support", cost_center="CC-410")


@pytest.fixture
def search(reseeded):
    return Team.objects.create(name="Search", slug="search", cost_center="CC-520")


@pytest.fixture
def agent(support):
    return Workload.objects.create(team=support, name="Support agent", slug="support-agent", latency_profile="realtime")


@pytest.fixture
def ranker(search):
    return Workload.objects.create(team=search, name="Search ranker", slug="search-ranker", latency_profile="batch")


# --- an ingest run ---


@pytest.mark.django_db(transaction=True)
def test_a_file_import_signals_once_with_its_account_and_days_and_raises_the_cap_it_crosses(account, agent, support):
    AttributionRule.objects.create(workload=agent, priority=1, project="support")
    cap = team_cap(support)
    yesterday = TODAY - dt.timedelta(days=1)
    run = import_csv(account, csv_of((yesterday, "4.00", "support"), (TODAY, "8.00", "support")))
    assert run.status == "succeeded", run.error
    [change] = queued
    assert (change.reason, change.days, change.account_ids) == ("ingest", (yesterday, TODAY), (account.id,))
    assert cap_events(cap) == {50, 80, 100}  # $12 of a $10 cap


@pytest.mark.django_db(transaction=True)
def test_a_failed_import_signals_nothing_and_raises_nothing(account, agent, support):
    AttributionRule.objects.create(workload=agent, priority=1, project="support")
    cap = team_cap(support)
    broken = csv_of((TODAY, "50.00", "support")) + b"not-a-day,gpt-5-mini,1,1,1.00,support\n"
    run = import_csv(account, broken)
    assert run.status == "failed"
    assert not queued and not AlertEvent.objects.filter(cap=cap).exists()


# --- an API pull ---

JUNE_16 = dt.datetime(2026, 6, 16, 12, tzinfo=dt.UTC)  # the fake OpenAI's fixtures cover 2026-06-12 … 06-16


@pytest.fixture
def api_account(reseeded, fake_openai, time_machine):
    time_machine.move_to(JUNE_16)
    account = Account.objects.create(
        name="openai-api",
        provider=Provider.objects.get(slug="openai"),
        connector="openai_api",
        base_url=fake_openai.url + "/v1",
    )
    account_set_credentials(account=account, secret=SECRET)
    return account


@pytest.mark.django_db(transaction=True)
def test_an_api_pull_signals_once_with_its_window_days_and_raises_the_cap_it_crosses(api_account, agent, support):
    AttributionRule.objects.create(workload=agent, priority=1)  # a catch-all: every line is the support agent's
    cap = team_cap(support, amount="0.01")
    [run] = account_sync(
        account=api_account, start=dt.datetime(2026, 6, 12, tzinfo=dt.UTC), end=dt.datetime(2026, 6, 16, tzinfo=dt.UTC)
    )
    assert run.status == "succeeded", run.error
    [change] = queued
    assert change.reason == "ingest" and change.account_ids == (api_account.id,)
    assert change.days == tuple(dt.date(2026, 6, d) for d in (12, 13, 14, 15))
    assert 100 in cap_events(cap)


@pytest.mark.django_db(transaction=True)
def test_an_api_pull_fetches_its_pages_before_taking_the_lock_a_rule_change_waits_for(api_account, fake_openai):
    """A provider's retries (Retry-After) must never hold up a rule change: the pages are read before the write
    transaction opens and the import takes the attribution lock shared."""
    lock_free_while_fetching: list[bool] = []
    pages = cursor_pages([load(f"costs_page{n}.json") for n in (1, 2, 3)])

    def costs(query):
        # Asked from another connection while the import waits for this page: could a rule change lock now?
        def probe():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", ATTRIBUTION_LOCK)
                lock_free_while_fetching.append(cursor.fetchone()[0])
            connection.close()

        prober = threading.Thread(target=probe)
        prober.start()
        prober.join()
        return pages(query)

    fake_openai.route(COSTS, costs)
    [run] = account_sync(
        account=api_account, start=dt.datetime(2026, 6, 12, tzinfo=dt.UTC), end=dt.datetime(2026, 6, 16, tzinfo=dt.UTC)
    )
    assert run.status == "succeeded", run.error
    assert lock_free_while_fetching and all(lock_free_while_fetching)


@pytest.mark.django_db(transaction=True)
def test_an_api_pull_that_fails_signals_nothing(api_account, fake_openai):
    fake_openai.route(COSTS, [Reply(200, "{malformed")])
    [run] = account_sync(
        account=api_account, start=dt.datetime(2026, 6, 12, tzinfo=dt.UTC), end=dt.datetime(2026, 6, 16, tzinfo=dt.UTC)
    )
    assert run.status == "failed"
    assert not queued


# --- a rule change (UI / API) ---


@pytest.mark.django_db(transaction=True)
def test_a_rule_change_signals_once_with_the_workloads_and_teams_that_moved_and_raises_the_cap(
    account, agent, support, ranker, ada
):
    last_week = TODAY - dt.timedelta(days=7)
    import_csv(account, csv_of((last_week, "3.00", "support"), (TODAY, "9.00", "support"), (TODAY, "5.00", "search")))
    cap = team_cap(support)
    assert cap_events(cap) == set()  # unattributed until a rule says otherwise
    queued.clear()
    rule_create(by=ada, workload=agent, priority=1, project="support")  # queues the re-attribution; inline here
    [change] = queued
    assert change.reason == "reattribution" and change.days == (last_week, TODAY)
    assert change.workload_ids == (agent.id,) and change.team_ids == (support.id,)  # from unattributed (None)
    assert cap_events(cap) == {50, 80, 100}


@pytest.mark.django_db(transaction=True)
def test_a_rule_change_on_the_rules_page_signals_once(account, agent, support, client_as, ada):
    import_csv(account, csv_of((TODAY, "12.00", "support")))
    cap = team_cap(support)
    queued.clear()
    response = client_as(ada).post(reverse("rule-create"), {"workload": agent.pk, "priority": 1, "project": "support"})
    assert response.status_code == 302
    assert [c.reason for c in queued] == ["reattribution"]
    assert 100 in cap_events(cap)


# --- config apply ---

CONFIG = """
teams:
  - {name: Support Platform, slug: support, cost_center: CC-410}
  - {name: Search, slug: search, cost_center: CC-520}
workloads:
  - {name: Support agent, slug: support-agent, team: %(agent_team)s, latency_profile: realtime}
  - {name: Search ranker, slug: search-ranker, team: search, latency_profile: batch}
rules:
%(rules)s
"""


def config(
    *, agent_team="support", rules="  - {workload: support-agent, priority: 1, match: {project: support}}", prices=""
):
    return config_apply(
        path="config.yaml", text=CONFIG % {"agent_team": agent_team, "rules": rules} + prices, environ={}
    )


@pytest.mark.django_db(transaction=True)
def test_a_config_apply_that_changes_a_rule_signals_once_and_raises_the_cap(account, agent, ranker, support, search):
    config()
    last_week = TODAY - dt.timedelta(days=7)
    import_csv(account, csv_of((last_week, "2.00", "support"), (TODAY, "11.00", "search")))
    cap = team_cap(search)
    queued.clear()
    config(
        rules="  - {workload: support-agent, priority: 1, match: {project: support}}\n"
        "  - {workload: search-ranker, priority: 2, match: {project: search}}"
    )
    [change] = queued
    assert change.reason == "config" and change.days == (TODAY,)
    assert change.workload_ids == (ranker.id,) and change.team_ids == (search.id,)
    assert cap_events(cap) == {50, 80, 100}


@pytest.mark.django_db(transaction=True)
def test_a_config_apply_that_moves_a_workload_and_changes_a_rule_sends_one_signal_with_both(
    account, agent, ranker, support, search
):
    config()
    last_week = TODAY - dt.timedelta(days=7)
    import_csv(account, csv_of((last_week, "2.00", "support"), (TODAY, "11.00", "search")))
    queued.clear()
    config(
        agent_team="search",
        rules="  - {workload: support-agent, priority: 1, match: {project: support}}\n"
        "  - {workload: search-ranker, priority: 2, match: {project: search}}",
    )
    [change] = queued
    assert change.reason == "config" and change.days == (last_week, TODAY)
    assert change.workload_ids == (agent.id, ranker.id) and change.team_ids == (support.id, search.id)


@pytest.mark.django_db(transaction=True)
def test_a_config_apply_that_changes_only_a_price_signals_nothing_as_stored_spend_is_unchanged(account, agent, support):
    """A line's estimated cost is fixed when it is imported; a new price applies to the next import of its window
    (which signals). So a price alone changes no spend and must not claim it did."""
    config()
    import_csv(account, csv_of((TODAY, "3.00", "support")))
    queued.clear()
    result = config(
        prices="prices:\n  - {provider: openai, model: gpt-5-mini, input_per_mtok: '9.99', output_per_mtok: '19.99'}\n"
    )
    assert result.changes["prices"]["created"] + result.changes["prices"]["updated"] == 1
    assert not queued


@pytest.mark.django_db(transaction=True)
def test_a_config_apply_rolled_back_signals_nothing(account, agent, support, search):
    config()
    import_csv(account, csv_of((TODAY, "12.00", "support")))
    cap = team_cap(search)
    queued.clear()
    with pytest.raises(RuntimeError), transaction.atomic():
        config(agent_team="search")  # moved, rolled up, signal registered …
        raise RuntimeError("… and the caller's transaction rolls back")
    assert not queued and not AlertEvent.objects.filter(cap=cap).exists()
    assert Workload.objects.get(pk=agent.pk).team_id == support.id


# --- a workload moved to another team ---


@pytest.mark.django_db(transaction=True)
def test_a_workload_moved_to_another_team_signals_its_days_the_workload_and_both_teams(account, agent, support, search):
    AttributionRule.objects.create(workload=agent, priority=1, project="support")
    last_week = TODAY - dt.timedelta(days=7)
    import_csv(account, csv_of((last_week, "1.00", "support"), (TODAY, "12.00", "support")))
    cap = team_cap(search)
    queued.clear()
    workload_team_move(workload=agent, team=search)
    [change] = queued
    assert change.reason == "workload moved" and change.days == (last_week, TODAY)
    assert change.workload_ids == (agent.id,) and change.team_ids == (support.id, search.id)
    assert cap_events(cap) == {50, 80, 100}


@pytest.mark.django_db(transaction=True)
def test_moving_a_workload_in_the_admin_takes_its_history_along_and_signals_once(
    account, agent, support, search, client_as, ada
):
    AttributionRule.objects.create(workload=agent, priority=1, project="support")
    import_csv(account, csv_of((TODAY, "12.00", "support")))
    cap = team_cap(search)
    queued.clear()
    response = client_as(ada).post(
        reverse("admin:finops_workload_change", args=[agent.pk]),
        {
            "name": agent.name,
            "slug": agent.slug,
            "team": search.pk,
            "latency_profile": agent.latency_profile,
            "sla_seconds": "",
            "outcome_unit": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    [change] = queued
    assert change.reason == "workload moved" and change.team_ids == (support.id, search.id)
    assert cap_events(cap) == {50, 80, 100}


# --- what an evaluation after a change looks at ---


def two_accounts_with_lines(account, agent, ranker):
    """Support's lines on `account`, Search's on another account, both today."""
    other = Account.objects.create(
        name="anthropic-prod", provider=Provider.objects.get(slug="anthropic"), connector="usage_csv"
    )
    AttributionRule.objects.create(workload=agent, priority=1, project="support")
    AttributionRule.objects.create(workload=ranker, priority=2, project="search")
    assert import_csv(account, csv_of((TODAY, "12.00", "support"))).status == "succeeded"
    assert import_csv(other, csv_of((TODAY, "12.00", "search"))).status == "succeeded"
    return other


@pytest.mark.django_db(transaction=True)
def test_an_import_evaluates_the_caps_of_the_teams_its_account_has_spend_for_on_those_days(
    account, agent, ranker, support, search
):
    from finops.alerts.evaluate import alerts_evaluate

    other = two_accounts_with_lines(account, agent, ranker)
    support_cap, search_cap = team_cap(support), team_cap(search)
    change = SpendChange(days=(TODAY,), reason="ingest", account_ids=(other.id,))
    alerts_evaluate(change=change)
    assert cap_events(search_cap) == {50, 80, 100}
    assert cap_events(support_cap) == set()  # Support spends nothing on that account: the beat's catch-up sees it
    alerts_evaluate()
    assert cap_events(support_cap) == {50, 80, 100}


@pytest.mark.django_db(transaction=True)
def test_an_evaluation_that_finds_every_threshold_raised_already_builds_no_figures_again(
    account, agent, ranker, support, search, django_assert_max_num_queries
):
    from finops.alerts import caps as cap_alerts
    from finops.alerts.evaluate import alerts_evaluate
    from finops.alerts.events import today_utc

    two_accounts_with_lines(account, agent, ranker)
    caps = [team_cap(support), team_cap(search)]
    assert len(alerts_evaluate()) == 6
    with django_assert_max_num_queries(8):  # the caps, the events raised, the statuses' grouped reads: no figures
        assert cap_alerts.evaluate(today=today_utc()) == []
    assert all(cap_events(cap) == {50, 80, 100} for cap in caps)
