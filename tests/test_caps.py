"""Spend caps (issue 10): the one write path and its validation, who may write, the pages and the API.

Spend sits on 2026-11-20, the day the clock is frozen on: $12 (and 3,300 tokens of unknown cost) on Support's
agent, $30 on Search's ranker.
"""

import datetime as dt
import io
import json
from decimal import Decimal

import pytest
import time_machine
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from finops.alerts.services.caps import CapInvalid, cap_create, cap_delete, cap_update
from finops.core import crypto, display
from finops.models import AlertEvent, AlertKind, AttributionRule, Cap, Provider
from finops.reports import charts
from finops.spend.services.attribution import history_reattribute
from ingest.services import usage_file_import

SECRET = "whsec-Kq2vN8xR4tLm7pZ0"
NOW = dt.datetime(2026, 11, 20, 15, 0, tzinfo=dt.UTC)
JSON = {"content_type": "application/json"}


@pytest.fixture(autouse=True)
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def spend(openai_account, support_agent, search_ranker):
    csv = (
        "day,model,input_tokens,output_tokens,cost,project\n"
        "2026-11-20,gpt-5-mini,1000,100,12,proj_support\n"
        "2026-11-20,my-private-model,3000,300,,proj_support\n"
        "2026-11-20,gpt-5-mini,3000,300,30,proj_search\n"
    )
    run = usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error
    AttributionRule.objects.create(workload=support_agent, priority=1, project="proj_support")
    AttributionRule.objects.create(workload=search_ranker, priority=2, project="proj_search")
    history_reattribute()


def valid(**overrides) -> dict:
    fields = {
        "name": "Support monthly",
        "scope": "team",
        "target": "support",
        "amount": "100",
        "recipients": ["lead@example.com", "role:team_leads"],
    }
    return {**fields, **overrides}


@pytest.fixture
def support_cap(ada, support_team):
    return cap_create(by=ada, **valid())


@pytest.fixture
def search_cap(ada, search_team):
    return cap_create(by=ada, **valid(name="Search monthly", target="search", amount="20"))


@pytest.fixture
def org_cap(ada):
    return cap_create(by=ada, **valid(name="Whole company", scope="org", target=None, amount="1000"))


# --- the service ---


def test_a_cap_gets_the_default_thresholds_and_keeps_its_recipients_in_order(ada, support_team):
    cap = cap_create(by=ada, **valid(recipients=" role:finance, a@example.com,role:finance "))

    assert cap.thresholds == [50, 80, 100]
    assert cap.recipients == ["role:finance", "a@example.com"]
    assert (cap.scope, cap.team, cap.amount, cap.created_by) == ("team", support_team, Decimal("100"), ada)


def test_thresholds_are_whole_percentages_deduplicated_and_sorted(ada, support_team):
    assert cap_create(by=ada, **valid(thresholds=[100, 50, 80, 50])).thresholds == [50, 80, 100]
    assert cap_create(by=ada, **valid(name="b", thresholds="120, 90 %,1")).thresholds == [1, 90, 120]


@pytest.mark.parametrize(
    "overrides, field, words",
    [
        ({"target": "no-such-team"}, "target", "No team"),
        ({"scope": "org", "target": "support"}, "target", "no target"),
        ({"scope": "workload", "target": None}, "target", "needs the workload"),
        ({"scope": "galaxy"}, "scope", "Unknown scope"),
        ({"amount": "0"}, "amount", "more than 0"),
        ({"amount": "-5"}, "amount", "more than 0"),
        ({"amount": "lots"}, "amount", "not a decimal"),
        ({"thresholds": [0, 50]}, "thresholds", "outside 1–1000"),
        ({"thresholds": [1001]}, "thresholds", "outside 1–1000"),
        ({"thresholds": ["half"]}, "thresholds", "not a whole percentage"),
        ({"recipients": []}, "recipients", "at least one recipient"),
        ({"recipients": ["ops at example"]}, "recipients", "neither an email address nor a role"),
        ({"recipients": ["role:ceo"]}, "recipients", "Unknown role"),
        ({"webhook_url": "https://hooks.example.com/finops"}, "webhook_secret", "needs a signing secret"),
        ({"webhook_secret": SECRET}, "webhook_url", "without a webhook URL"),
        ({"webhook_url": "ftp://hooks.example.com", "webhook_secret": SECRET}, "webhook_url", "http(s)"),
        ({"period": "week"}, "period", "Unknown period"),
        ({"name": "  "}, "name", "Give the cap a name"),
    ],
)
def test_each_invalid_field_is_refused_with_its_name(ada, support_team, overrides, field, words):
    with pytest.raises(CapInvalid) as excinfo:
        cap_create(by=ada, **valid(**overrides))

    assert field in excinfo.value.errors and words in excinfo.value.errors[field], excinfo.value.errors
    assert not Cap.objects.exists()


def test_every_bad_field_is_named_at_once(ada, support_team):
    with pytest.raises(CapInvalid) as excinfo:
        cap_create(by=ada, **valid(amount="0", thresholds=[2000], recipients=[]))

    assert set(excinfo.value.errors) == {"amount", "thresholds", "recipients"}


def test_cap_names_are_unique(support_cap, ada):
    with pytest.raises(CapInvalid) as excinfo:
        cap_create(by=ada, **valid(target="support"))

    assert "unique" in excinfo.value.errors["name"]


def test_the_webhook_secret_is_stored_encrypted_and_kept_when_not_given_again(ada, support_team):
    cap = cap_create(by=ada, **valid(webhook_url="https://hooks.example.com/finops", webhook_secret=SECRET))
    assert SECRET not in cap.webhook_secret_ciphertext and crypto.decrypt(cap.webhook_secret_ciphertext) == SECRET

    cap = cap_update(cap=cap, by=ada, amount="150")
    assert crypto.decrypt(cap.webhook_secret_ciphertext) == SECRET and cap.amount == Decimal("150")

    cap = cap_update(cap=cap, by=ada, webhook_url="")
    assert cap.webhook_secret_ciphertext == ""


def test_changing_the_scope_asks_for_the_new_target(support_cap, ada):
    with pytest.raises(CapInvalid) as excinfo:
        cap_update(cap=support_cap, by=ada, scope="provider")

    assert "needs the provider" in excinfo.value.errors["target"]
    assert cap_update(cap=support_cap, by=ada, scope="provider", target="openai").provider == Provider.objects.get(
        slug="openai"
    )


def test_a_team_lead_may_cap_their_team_and_its_workloads(sam, support_agent):
    assert cap_create(by=sam, **valid()).team.slug == "support"
    cap = cap_create(by=sam, **valid(name="Agent", scope="workload", target="support-agent"))
    assert cap_update(cap=cap, by=sam, amount="75").amount == Decimal("75")
    cap_delete(cap=cap, by=sam)
    assert not Cap.objects.filter(name="Agent").exists()


@pytest.mark.parametrize("scope, target", [("org", None), ("provider", "openai"), ("account", "openai-prod")])
def test_a_team_lead_may_not_cap_what_spans_teams(sam, openai_account, scope, target):
    with pytest.raises(PermissionDenied):
        cap_create(by=sam, **valid(scope=scope, target=target))


def test_another_teams_target_reads_as_unknown_to_a_lead(sam, search_ranker):
    with pytest.raises(CapInvalid) as excinfo:
        cap_create(by=sam, **valid(scope="workload", target="search-ranker"))

    assert excinfo.value.errors["target"] == "No workload with the slug 'search-ranker'."


def test_a_lead_may_not_change_or_delete_an_organisation_cap_nor_move_their_cap_to_it(sam, org_cap):
    with pytest.raises(PermissionDenied):
        cap_update(cap=org_cap, by=sam, amount="1")
    with pytest.raises(PermissionDenied):
        cap_delete(cap=org_cap, by=sam)
    own = cap_create(by=sam, **valid())
    with pytest.raises(PermissionDenied):
        cap_update(cap=own, by=sam, scope="org", target=None)


def test_finance_and_plain_members_write_no_cap(fiona, support_team):
    from tests.conftest import make_user

    member = make_user("mo", "member", team=support_team, team_role="member")
    for user in (fiona, member):
        with pytest.raises(PermissionDenied):
            cap_create(by=user, **valid())


# --- the burn-up chart ---


def test_the_burn_up_chart_adds_up_the_days_and_draws_the_cap_and_the_forecast():
    points = [
        {"day": dt.date(2026, 11, 3), "cost": Decimal("10.5")},
        {"day": dt.date(2026, 11, 1), "cost": Decimal("2")},
    ]
    figure = charts.burn_up(
        points,
        amount=Decimal(100),
        forecast=Decimal("140"),
        forecast_from=(dt.date(2026, 11, 3), Decimal("12.5")),
        period_start=dt.date(2026, 11, 1),
        period_end=dt.date(2026, 12, 1),
        currency="USD",
    )

    spent, cap, forecast = figure["data"]
    assert (spent["x"], spent["y"]) == (["2026-11-01", "2026-11-02", "2026-11-03"], [2.0, 2.0, 12.5])
    assert spent["customdata"] == ["$2.00", "$2.00", "$12.50"]
    assert (cap["x"], cap["y"]) == (["2026-11-01", "2026-11-30"], [100.0, 100.0])
    assert (forecast["x"], forecast["y"], forecast["line"]["dash"]) == (
        ["2026-11-03", "2026-11-30"],
        [12.5, 140.0],
        "dash",
    )


def test_without_a_forecast_the_burn_up_has_no_forecast_line():
    figure = charts.burn_up(
        [],
        amount=Decimal(5),
        forecast=None,
        forecast_from=None,
        period_start=dt.date(2026, 10, 1),
        period_end=dt.date(2027, 1, 1),
        currency="USD",
    )

    assert [t["name"] for t in figure["data"]] == ["Spent", "Cap"]


# --- pages ---


def test_the_caps_page_shows_each_caps_progress_status_and_unknown_cost(client_as, ada, spend, support_cap, search_cap):
    page = client_as(ada).get(reverse("cap-list")).content.decode()

    assert page.count('role="progressbar"') == 2
    assert page.count('class="capbar-threshold" style="left: 50.00%"') == 1  # Support's 50 % tick
    assert (
        page.count('class="capbar-threshold" style="left: 33.33%"') == 1
    )  # Search's: $30 of $20 stretches its bar to 150 %
    assert "$12.00</strong> of $100.00 (12.0 %)" in page
    assert "$30.00</strong> of $20.00 (150.0 %)" in page
    assert 'data-status="breached">Breached' in page and 'data-status="ok">OK' in page
    assert "3,300 tokens of unknown cost" in page
    assert "not enough history" in page  # one day of spend forecasts nothing


def test_the_caps_page_has_an_empty_state_and_is_in_everyones_navigation(client_as, sam, ada):
    page = client_as(sam).get(reverse("cap-list")).content.decode()

    assert "No caps yet" in page and 'href="/caps/"' in page
    assert "Create the first cap" in client_as(ada).get(reverse("cap-list")).content.decode()


def test_a_quarterly_cap_counts_the_quarter_and_says_which(client_as, ada, spend, support_agent):
    cap_create(
        by=ada, **valid(name="Agent quarterly", scope="workload", target="support-agent", period="quarter", amount="48")
    )

    page = client_as(ada).get(reverse("cap-list")).content.decode()

    assert "Workload: Support agent · Q4 2026" in page and "$12.00</strong> of $48.00 (25.0 %)" in page


def test_a_member_sees_only_their_teams_caps(client_as, sam, support_cap, search_cap, org_cap):
    page = client_as(sam).get(reverse("cap-list")).content.decode()

    assert "Support monthly" in page
    assert "Search monthly" not in page and "Whole company" not in page


def test_another_teams_cap_answers_404_on_every_page(client_as, tess, support_cap):
    client = client_as(tess)
    for name in ("cap-detail", "cap-edit", "cap-delete"):
        assert client.get(reverse(name, args=[support_cap.pk])).status_code == 404, name
    assert client.post(reverse("cap-delete", args=[support_cap.pk])).status_code == 404
    assert Cap.objects.filter(pk=support_cap.pk).exists()


def test_finance_reads_a_cap_but_may_not_edit_it(client_as, fiona, support_cap):
    client = client_as(fiona)
    assert client.get(reverse("cap-detail", args=[support_cap.pk])).status_code == 200
    assert client.get(reverse("cap-edit", args=[support_cap.pk])).status_code == 403
    assert client.get(reverse("cap-create")).status_code == 403  # she reads caps: refused, not hidden


def test_the_cap_page_shows_the_burn_up_the_forecast_method_the_drivers_and_the_alert_history(
    client_as, sam, spend, support_cap
):
    AlertEvent.objects.create(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{support_cap.id}",
        period_start=dt.date(2026, 11, 1),
        threshold=50,
        cap=support_cap,
        title="Support monthly passed 50 %",
        state=AlertEvent.State.SENT,
        sent_at=NOW,
    )

    response = client_as(sam).get(reverse("cap-detail", args=[support_cap.pk]))
    page = response.content.decode()

    figure = json.loads(page.split('<script id="chart-cap" type="application/json">')[1].split("</script>")[0])
    assert [t["name"] for t in figure["data"]] == ["Spent", "Cap"]
    assert figure["data"][0]["x"][0] == "2026-11-01" and figure["data"][0]["y"][-2:] == [
        0.0,
        12.0,
    ]  # flat, then today's $12
    assert "Not enough history to forecast" in page
    assert (
        "Support agent" in page
        and display.model_name("gpt-5-mini") in page
        and display.model_name("my-private-model") in page
    )
    assert "Support monthly passed 50 %" in page and "2026-11-20 15:00" in page and ">Sent<" in page
    assert "3,300 tokens of unknown cost" in page


def test_the_forecast_reads_as_a_method_a_daily_rate_and_the_days_left(client_as, ada, openai_account, support_agent):
    lines = "".join(f"2026-11-{day:02d},gpt-5-mini,10,1,{day},proj_support\n" for day in range(13, 20))
    csv = "day,model,input_tokens,output_tokens,cost,project\n" + lines
    usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv")
    AttributionRule.objects.create(workload=support_agent, priority=1, project="proj_support")
    history_reattribute()
    cap = cap_create(by=ada, **valid(scope="workload", target="support-agent", amount="200"))

    page = client_as(ada).get(reverse("cap-detail", args=[cap.pk])).content.decode()

    # days 13–19 spent 13..19 (a week: no weekday profile yet, their mean 16); 11 days left, today included:
    # 112 + 16 × 11 = 288
    assert "$16.00/day on average for the 11 days left (daily mean of the last 7 days)" in page
    assert "At period end: <strong>forecast $288.00 (range $" in page and "= $112.00 spent before today" in page
    assert "<strong>$88.00 over the cap</strong>" in page and 'data-status="forecast"' in page


def test_the_form_creates_a_cap_through_the_service(client_as, sam, support_agent):
    response = client_as(sam).post(
        reverse("cap-create"),
        {
            "name": "Agent cap",
            "scope": "workload:support-agent",
            "period": "quarter",
            "amount": "250.50",
            "thresholds": "90, 50",
            "alert_on_forecast": "on",
            "recipients": "sam@example.com, role:team_leads",
        },
    )

    cap = Cap.objects.get(name="Agent cap")
    assert response.status_code == 302 and response["Location"] == reverse("cap-detail", args=[cap.pk])
    assert (cap.workload, cap.period, cap.amount, cap.thresholds, cap.created_by) == (
        support_agent,
        "quarter",
        Decimal("250.50"),
        [50, 90],
        sam,
    )


def test_the_form_shows_the_services_errors_on_their_fields_and_offers_a_lead_only_their_scopes(
    client_as, sam, support_agent, search_ranker
):
    client = client_as(sam)
    form = client.get(reverse("cap-create")).content.decode()
    assert "workload:support-agent" in form and "search-ranker" not in form and 'value="org"' not in form

    response = client.post(
        reverse("cap-create"),
        {
            "name": "x",
            "scope": "team:support",
            "period": "month",
            "amount": "10",
            "thresholds": "0",
            "recipients": "nobody",
        },
    )
    page = response.content.decode()
    assert response.status_code == 200 and not Cap.objects.exists()
    assert "0 % is outside 1–1000 %" in page and "neither an email address nor a role" in page


def test_editing_keeps_the_webhook_secret_and_never_shows_it(client_as, ada, support_team):
    cap = cap_create(by=ada, **valid(webhook_url="https://hooks.example.com/x", webhook_secret=SECRET))
    client = client_as(ada)
    form = client.get(reverse("cap-edit", args=[cap.pk])).content.decode()
    # Neither the secret nor its first characters, nor the URL's path: only "Current: scheme://host/…".
    assert SECRET not in form and SECRET[:4] not in form and "hooks.example.com/x" not in form
    assert "Current: https://hooks.example.com/… — leave empty to keep it." in form

    response = client.post(
        reverse("cap-edit", args=[cap.pk]),
        {
            "name": cap.name,
            "scope": "team:support",
            "period": "month",
            "amount": "300",
            "thresholds": "50, 100",
            "recipients": "role:finance",
            "webhook_url": "",
            "webhook_secret": "",
        },
    )

    cap.refresh_from_db()
    assert (
        response.status_code == 302
        and cap.amount == Decimal("300")
        and crypto.decrypt(cap.webhook_secret_ciphertext) == SECRET
    )
    assert cap.webhook_url == "https://hooks.example.com/x"  # an empty field kept the URL
    page = client.get(reverse("cap-detail", args=[cap.pk])).content.decode()
    assert SECRET not in page and SECRET[:4] not in page and "hooks.example.com/x" not in page
    assert "<code>https://hooks.example.com/…</code>" in page

    client.post(
        reverse("cap-edit", args=[cap.pk]),
        {
            "name": cap.name,
            "scope": "team:support",
            "period": "month",
            "amount": "300",
            "thresholds": "50, 100",
            "recipients": "role:finance",
            "webhook_url": "",
            "webhook_secret": "",
            "remove_webhook": "on",
        },
    )
    cap.refresh_from_db()
    assert cap.webhook_url == "" and cap.webhook_secret_ciphertext == ""


def test_deleting_a_cap_asks_first(client_as, sam, support_cap):
    client = client_as(sam)
    assert "Delete cap Support monthly?" in client.get(reverse("cap-delete", args=[support_cap.pk])).content.decode()
    assert Cap.objects.filter(pk=support_cap.pk).exists()

    assert client.post(reverse("cap-delete", args=[support_cap.pk]))["Location"] == reverse("cap-list")
    assert not Cap.objects.filter(pk=support_cap.pk).exists()


# --- API ---


def test_the_api_creates_reads_changes_and_deletes_a_cap_with_money_as_decimal_strings(
    client_as, ada, spend, support_team
):
    client = client_as(ada)
    created = client.post(
        "/api/v1/caps", valid(amount="100.25", webhook_url="https://hooks.example.com/x", webhook_secret=SECRET), **JSON
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["amount"], body["spent"], body["percent"], body["status"]) == (
        "100.250000",
        "12.000000",
        "11.97",
        "ok",
    )
    assert (
        body["unpriced_tokens"] == 3300 and body["forecast"] is None and body["forecast_method"] == "not enough history"
    )
    assert SECRET not in created.content.decode() and SECRET[:4] not in created.content.decode()
    assert (body["webhook"], body["webhook_secret_set"]) == ("https://hooks.example.com/…", True)
    assert "webhook_url" not in body and "hooks.example.com/x" not in created.content.decode()

    url = f"/api/v1/caps/{body['id']}"
    assert client.get(url).json()["name"] == "Support monthly"
    assert [c["name"] for c in client.get("/api/v1/caps").json()] == ["Support monthly"]
    patched = client.patch(url, {"amount": "10", "thresholds": [100, 50]}, **JSON).json()
    assert (patched["amount"], patched["thresholds"], patched["status"], patched["crossed"]) == (
        "10.000000",
        [50, 100],
        "breached",
        [50, 100],
    )
    put = client.put(url, valid(name="Renamed", amount="500"), **JSON)
    assert put.status_code == 200 and put.json()["name"] == "Renamed" and put.json()["thresholds"] == [50, 100]
    assert client.delete(url).status_code == 204 and not Cap.objects.exists()


def test_the_api_refuses_a_bad_cap_naming_the_field(client_as, ada, support_team):
    response = client_as(ada).post("/api/v1/caps", valid(thresholds=[0], recipients=["role:ceo"]), **JSON)

    assert response.status_code == 400
    assert set(response.json()) == {"thresholds", "recipients"}
    assert (
        client_as(ada).post("/api/v1/caps", valid(amount=1.5), **JSON).status_code == 201
    )  # JSON numbers parse as decimals


def test_the_api_hides_another_teams_cap_and_refuses_writes_a_user_may_not_do(
    client_as, tess, sam, fiona, support_cap, org_cap
):
    url = f"/api/v1/caps/{support_cap.pk}"
    for method in ("get", "patch", "put", "delete"):
        assert getattr(client_as(tess), method)(url, {}, **JSON).status_code == 404, method
    assert [c["name"] for c in client_as(tess).get("/api/v1/caps").json()] == []
    assert client_as(sam).get(f"/api/v1/caps/{org_cap.pk}").status_code == 404
    assert client_as(sam).post("/api/v1/caps", valid(name="o", scope="org", target=None), **JSON).status_code == 403
    assert client_as(fiona).post("/api/v1/caps", valid(name="f"), **JSON).status_code == 403
    assert client_as(fiona).patch(url, {"amount": "1"}, **JSON).status_code == 403
    assert client_as(fiona).get(url).status_code == 200


def test_the_api_schema_describes_the_caps_routes(client_as, ada):
    schema = client_as(ada).get("/api/schema/?format=json").json()

    assert {"get", "post"} <= set(schema["paths"]["/api/v1/caps"])
    assert {"get", "put", "patch", "delete"} <= set(schema["paths"]["/api/v1/caps/{id}"])
