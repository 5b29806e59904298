"""Pages served from the page cache are never stale and never another person's (issue 23; finops/web/page_cache.py,
finops/web/data_version.py; docs/performance.md "Page cache").

Transactional: the data version moves at commit, and the cache stays out of any open transaction (the `db`
fixture's would hide every write from it), so each write here commits as it would in production. The cache is the
configured Redis (the test settings' database)."""

import datetime as dt
import io
import re
import socket

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from finops.models import AttributionRule, Membership, User
from finops.org.services.users import user_set_role
from finops.spend.services.attribution import history_reattribute
from finops.web import data_version
from finops.web.page_cache import HEADER
from ingest.services import usage_file_import

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _frozen(time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))


def import_days(account, days, *, support_cost=10, search_cost=2):
    rows = ["day,model,input_tokens,output_tokens,cost,project"]
    for day in days:
        rows += [
            f"2026-11-{day:02d},gpt-5-mini,1000000,0,{support_cost},support",
            f"2026-11-{day:02d},gpt-5,100000,0,{search_cost},search",
        ]
    run = usage_file_import(account=account, stream=io.BytesIO("\n".join(rows).encode()), file_name="nov.csv")
    assert run.status == "succeeded"


@pytest.fixture
def november(reseeded, openai_account, support_agent, search_ranker):
    import_days(openai_account, range(1, 22))
    AttributionRule.objects.create(workload=support_agent, priority=1, project="support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="search")
    history_reattribute()


def month_to_date(response) -> str:
    """The month-to-date tile's figure as the page prints it."""
    html = response.content.decode()
    return re.search(r"Month to date.{0,400}?(\$[\d,]+\.\d\d)", html, re.S).group(1)


def test_the_second_visit_is_served_from_the_cache_with_the_same_figures(client_as, ada, november):
    client = client_as(ada)
    first = client.get(reverse("overview"))
    second = client.get(reverse("overview"))
    assert (first[HEADER], second[HEADER]) == ("miss", "hit")
    assert month_to_date(first) == month_to_date(second) == "$252.00"  # $12 a day, Nov 1–21
    assert len(second.content) == pytest.approx(len(first.content), abs=200)  # the CSRF tokens differ, nothing else


def test_an_import_invalidates_the_cached_page(client_as, ada, november, openai_account):
    client = client_as(ada)
    client.get(reverse("overview"))
    assert client.get(reverse("overview"))[HEADER] == "hit"
    import_days(openai_account, [21], support_cost=110)  # a restated day: +$100
    after = client.get(reverse("overview"))
    assert after[HEADER] == "miss"
    assert month_to_date(after) == "$352.00"


def test_a_rule_change_invalidates_a_team_leads_page(client_as, sam, november, support_agent, search_ranker):
    client = client_as(sam)
    page = reverse("team-detail", args=["support"])
    before = client.get(page)
    assert client.get(page)[HEADER] == "hit"
    AttributionRule.objects.filter(workload=search_ranker).update(workload=support_agent)
    history_reattribute()
    after = client.get(page)
    assert after[HEADER] == "miss"
    assert before.content.count(b"$210.00") >= 1  # $10 a day on support
    assert after.content.count(b"$252.00") >= 1  # and now search's $2 a day too


def test_two_people_never_share_an_entry(client_as, ada, sam, november):
    admin, lead = client_as(ada), client_as(sam)
    assert admin.get(reverse("team-list"))[HEADER] == "miss"
    assert admin.get(reverse("team-list"))[HEADER] == "hit"
    seen_by_lead = lead.get(reverse("team-list"))
    assert seen_by_lead[HEADER] == "miss"  # the admin's entry is not the lead's
    assert b"Search" not in seen_by_lead.content and b"Support Platform" in seen_by_lead.content
    assert b"ada" not in lead.get(reverse("team-list")).content  # the lead's own entry, with the lead's name


def test_a_person_given_another_team_sees_it_at_once(client_as, sam, november, search_team):
    client = client_as(sam)
    client.get(reverse("team-list"))
    assert b"Search" not in client.get(reverse("team-list")).content
    Membership.objects.create(user=sam, team=search_team, role="member")
    assert b"Search" in client.get(reverse("team-list")).content


def test_a_role_taken_away_is_not_served_from_the_cache(client_as, november):
    from tests.conftest import make_user

    lee = make_user("lee", User.Role.ADMIN)
    client = client_as(lee)
    assert client.get(reverse("overview"))[HEADER] == "miss"
    user_set_role(user=lee, role=User.Role.MEMBER)  # no team: nothing to see
    page = client.get(reverse("team-list"))
    assert page[HEADER] == "miss"
    assert b"Support Platform" not in page.content


def test_a_committed_write_moves_the_version_and_a_rolled_back_one_does_not(november, ada):
    before = data_version.current()
    with pytest.raises(RuntimeError), transaction.atomic():
        ada.first_name = "Ada"
        ada.save(update_fields=["first_name"])
        raise RuntimeError("rolled back")
    assert data_version.current() == before
    with transaction.atomic():  # two writes, one transaction: one step
        ada.first_name = "Ada"
        ada.save(update_fields=["first_name"])
        ada.last_name = "Lovelace"
        ada.save(update_fields=["last_name"])
    database, writes = data_version.current().split(":")
    assert f"{database}:{int(writes) - 1}" == before


def test_every_table_a_page_could_read_moves_the_version():
    assert data_version.tables_without_trigger() == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT tgrelid::regclass::text FROM pg_trigger WHERE tgname = %s", [data_version.TRIGGER])
        watched = {name for (name,) in cursor.fetchall()}
    # Every product table, many-to-many tables included, is watched: not a few named ones.
    models = {m._meta.db_table for m in apps.get_app_config("finops").get_models(include_auto_created=True)}
    assert models <= watched


def test_folding_the_rows_of_gone_connections_keeps_the_version(november):
    before = data_version.current()
    with connection.cursor() as cursor:  # rows of backends long gone (no live backend has a negative pid)
        cursor.execute(f"INSERT INTO {data_version.TABLE} VALUES (-1, 5), (-2, 7)")
    after_insert = data_version.current()
    assert data_version.compact() >= 2
    assert data_version.current() == after_insert != before
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {data_version.TABLE} WHERE backend < 0")
        assert cursor.fetchone()[0] == 0


def test_folding_into_a_missing_row_0_keeps_the_version(november):
    with connection.cursor() as cursor:  # row 0 gone (a table emptied by hand): the folded writes must land anyway
        cursor.execute(f"DELETE FROM {data_version.TABLE} WHERE backend = 0")
        cursor.execute(f"INSERT INTO {data_version.TABLE} VALUES (-1, 5), (-2, 7)")
    before = data_version.current()
    assert data_version.compact() >= 2  # and any other backend's row that is gone
    assert data_version.current() == before
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT writes FROM {data_version.TABLE} WHERE backend = 0")
        assert cursor.fetchone()[0] >= 12


def test_the_csrf_token_of_a_cached_page_is_the_sessions_own(ada, november):
    first, second = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    first.force_login(ada)
    second.force_login(ada)
    first.get(reverse("overview"))
    page = second.get(reverse("overview"))
    assert page[HEADER] == "hit"
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content).group(1).decode()
    assert second.post(reverse("logout"), {"csrfmiddlewaretoken": token}).status_code == 302  # not 403


def test_flash_messages_waiting_are_shown_by_a_computed_page(client_as, ada, november):
    client = client_as(ada)
    client.get(reverse("overview"))
    client.cookies["messages"] = "pending"
    page = client.get(reverse("overview"))
    assert page.get(HEADER) is None  # neither served from the cache nor stored


def test_downloads_are_never_cached(client_as, ada, november):
    client = client_as(ada)
    client.get(reverse("overview") + "?csv=top_workloads")
    download = client.get(reverse("overview") + "?csv=top_workloads")
    assert download.get(HEADER) is None
    assert download["Content-Type"].startswith("text/csv")


def test_a_redis_that_is_down_leaves_pages_computed(client_as, ada, november, settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe is closed
    settings.CACHES = {
        **settings.CACHES,
        "pages": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        },
    }
    client = client_as(ada)
    for _ in range(2):
        page = client.get(reverse("overview"))
        assert page.status_code == 200 and page.get(HEADER) == "miss"
        assert month_to_date(page) == "$252.00"


def test_a_sign_in_or_an_api_call_alone_keeps_the_cache_and_any_other_change_to_the_user_does_not(ada, november):
    from django.contrib.auth.models import update_last_login

    from finops.models import ApiToken
    from finops.org.services.api_tokens import api_token_create, api_token_touch

    token, _ = api_token_create(user=ada, name="script", description="", scope="read", days=1)
    before = data_version.current()
    update_last_login(None, ada)  # what signing in writes
    api_token_touch(token=ApiToken.objects.get(pk=token.pk))
    assert ApiToken.objects.get(pk=token.pk).last_used_at is not None
    assert data_version.current() == before
    ada.time_zone = "Europe/Paris"  # shown on every page: a change of it is a change
    ada.save(update_fields=["time_zone"])
    assert data_version.current() != before
