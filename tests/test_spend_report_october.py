"""`manage.py spend` and GET /api/v1/spend on an October of usage, built once for the module
(tests/data_once.py): the same figures, sum over sum, end exclusive, unknown cost never 0, months, CSV, and every
parameter checked. No attribution rule: Explore's filters and the scopes per role are
tests/test_spend_report_filters.py."""

import csv
import datetime as dt
import io
import json
from decimal import Decimal

import pytest

from finops.spend.selectors.spend_report import GROUPS, spend_rows
from tests.data_once import built_once
from tests.spend_report_helpers import (
    MICRO,
    OCTOBER,
    api,
    by_group,
    edge_import,
    october_accounts,
    october_import,
    spend,
)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """October's usage, imported once for the module: every test reads it."""
    with built_once(django_db_blocker):
        october_import(october_accounts())
        yield


@pytest.fixture
def october(world, db):
    """The module's October is there (built once by `world`)."""


# --- the figures ---


def test_spend_by_provider_is_october_only_with_exact_decimal_strings(october):
    rows = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    )
    assert set(rows) == {"openai", "moonshot", "groq"}
    openai = rows["openai"]
    # gpt-5 at the catalog's 1.25 / 10 $/M: 2M in + 0.5M out = 2.50 + 5.00 estimated
    assert (
        openai["billed_cost"] == "1.500000" and openai["estimated_cost"] == "7.500000" and openai["cost"] == "9.000000"
    )
    assert (
        openai["input_tokens"] == 3_500_000
        and openai["cached_input_tokens"] == 200_000
        and openai["output_tokens"] == 650_000
    )
    assert openai["requests"] == 75 and openai["currency"] == "USD"
    assert openai["priced_tokens"] == 4_150_000 and openai["unpriced_tokens"] == 0
    # Σcost / Σ(input + output) × 10⁶ = 9.00 / 4.15M × 10⁶
    assert Decimal(openai["usd_per_mtok"]) == (Decimal("9") / Decimal(4_150_000) * 1_000_000).quantize(MICRO)
    assert rows["moonshot"]["cost"] == rows["moonshot"]["billed_cost"] == "2.778000"  # 20 CNY × 0.1389
    assert rows["moonshot"]["estimated_cost"] is None  # none of it is estimated: not "0.000000"


def test_a_group_with_no_priced_usage_has_an_unknown_cost_never_zero(october):
    groq = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    )["groq"]
    assert groq["cost"] is None and groq["billed_cost"] is None and groq["estimated_cost"] is None
    assert groq["usd_per_mtok"] is None
    assert groq["priced_tokens"] == 0 and groq["unpriced_tokens"] == 330_000


def test_dollars_per_million_tokens_divide_by_priced_tokens_only(october):
    (month,) = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "month", "--format", "json"))
    assert month["cost"] == "11.778000"
    assert month["priced_tokens"] == 4_150_000 + 2_000_000 and month["unpriced_tokens"] == 330_000
    # Groq's 330k unpriced tokens would make October look cheaper per token than anything it paid for.
    assert Decimal(month["usd_per_mtok"]) == (Decimal("11.778") / 6_150_000 * 1_000_000).quantize(MICRO)


def test_spend_by_day_uses_iso_days_and_the_same_total(october):
    rows = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "day", "--format", "json"))
    assert [r["group"] for r in rows] == ["2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-31"]
    assert by_group(rows)["2026-10-06"]["cost"] is None  # Groq's unpriced day
    assert sum(Decimal(r["cost"]) for r in rows if r["cost"] is not None) == Decimal("11.778")


def test_spend_by_month_labels_utc_calendar_months(october):
    rows = json.loads(spend("--start", "2026-10-05", "--end", "2026-11-02", "--by", "month", "--format", "json"))
    assert [(r["group"], r["label"], r["cost"]) for r in rows] == [
        ("2026-10", "2026-10", "3.278000"),  # Moonshot's 2.778 and the 31st's 0.50; not the 1st, 2nd
        ("2026-11", "2026-11", "99.000000"),
    ]


def test_the_table_shows_a_dash_for_an_unknown_cost(october):
    table = spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider").splitlines()
    groq = next(line for line in table if line.startswith("groq"))
    assert groq.split()[1] == "—" and "0.000000" not in groq


def test_spend_by_model_and_account_and_csv(october):
    models = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "model", "--format", "json"))
    )
    assert set(models) == {"gpt-5-mini", "gpt-5", "kimi-k2.6", "my-private-model"}
    accounts = by_group(
        json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "account", "--format", "json"))
    )
    assert set(accounts) == {"openai-main", "moonshot-main", "groq-main"}
    table = list(
        csv.DictReader(
            io.StringIO(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "csv"))
        )
    )
    assert {r["group"]: r["cost"] for r in table} == {"openai": "9.000000", "moonshot": "2.778000", "groq": ""}


# --- long periods: whole months from the monthly rollup give exactly the daily rollup's figures ---


@pytest.fixture
def priced_outside_unpriced_inside(db):
    """One more account with a billed line on 1 October and an unpriced one on 15 October, for its test."""
    edge_import()


@pytest.mark.parametrize(
    "start, end",
    [
        ("2026-10-01", "2026-11-01"),  # a whole month
        ("2026-10-02", "2026-11-01"),  # the month minus its first day
        ("2026-10-02", "2026-10-31"),  # gpt-5-mini's two days both left out: the group is not in the period
        ("2026-09-15", "2026-11-02"),  # a month before, October whole, a day of November
        ("2026-10-06", "2026-10-07"),  # one day
    ],
)
def test_reading_whole_months_gives_the_daily_rollups_figures(october, priced_outside_unpriced_inside, start, end):
    for by in GROUPS:
        for today in (dt.date(2026, 10, 20), dt.date(2026, 12, 31)):  # steers which edge reading is used
            period = {"start": dt.date.fromisoformat(start), "end": dt.date.fromisoformat(end), "by": by}
            assert spend_rows(**period, today=today) == spend_rows(**period, read_months=False), (by, today)


# --- the API: same figures, Explore's filters, every parameter checked ---


def test_the_api_gives_the_same_figures_as_the_command(october, client_as, fiona):
    command = json.loads(spend("--start", "2026-10-01", "--end", "2026-11-01", "--by", "provider", "--format", "json"))
    response = api(client_as(fiona), **OCTOBER, group_by="provider")
    assert response.status_code == 200 and response.json() == command


@pytest.mark.parametrize("unknown", ["teams", "foo", "group"])
def test_a_parameter_the_endpoint_does_not_know_is_refused_by_name(october, client_as, fiona, unknown):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", **{unknown: "x"})
    assert response.status_code == 400
    message = response.json()[unknown][0]
    assert unknown in message and "team" in message and "group_by" in message and "basis" in message


def test_a_parameter_given_twice_is_refused(october, client_as, fiona):
    response = client_as(fiona).get(
        "/api/v1/spend?start=2026-10-01&end=2026-11-01&group_by=model&team=support&team=search"
    )
    assert response.status_code == 400 and "team" in response.json()


def test_an_unknown_format_is_refused_by_name_not_as_a_missing_page(october, client_as, fiona):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", format="xml")
    assert response.status_code == 400 and "xml" in response.json()["format"][0]


def test_a_real_team_with_no_spend_is_an_empty_report_not_an_error(october, client_as, fiona, support_team):
    response = api(client_as(fiona), **OCTOBER, group_by="provider", team="support")
    assert response.status_code == 200 and response.json() == []


def test_a_member_sees_no_spend_outside_their_teams(october, client_as, sam):
    # Nothing is attributed to a team yet, so a team member's spend is empty, not the whole company's.
    response = api(client_as(sam), **OCTOBER, group_by="provider")
    assert response.json() == []
