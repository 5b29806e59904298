"""The Django admin cannot corrupt spend: usage lines, both rollups, tag sets and line signatures are read-only
there (invariant 7, rollups equal raw). Spend changes through imports and rules only."""

import io

import pytest
from django.db.models import Sum

from finops.models import Account, DailySpend, LineSignature, MonthlySpend, TagSet, UsageLine
from ingest.services import usage_file_import
from tests.rollup_check import assert_rollup_equals_raw

READ_ONLY = [UsageLine, DailySpend, MonthlySpend, TagSet, LineSignature]


@pytest.fixture
def spend(openai_account):
    text = (
        "day,model,input_tokens,output_tokens,cost,project\n"
        "2026-10-01,gpt-5-mini,1000,100,3.00,p1\n"
        "2026-10-02,gpt-5-mini,2000,200,5.00,p2\n"
    )
    run = usage_file_import(account=openai_account, stream=io.BytesIO(text.encode()), file_name="u.csv")
    assert run.status == "succeeded", run.error


def url(model, *parts) -> str:
    return "/".join(["/admin/finops", model._meta.model_name, *map(str, parts)]) + "/"


def totals():
    return (
        UsageLine.objects.count(),
        UsageLine.objects.aggregate(c=Sum("reporting_cost"))["c"],
        DailySpend.objects.aggregate(c=Sum("reporting_cost"))["c"],
        MonthlySpend.objects.aggregate(c=Sum("reporting_cost"))["c"],
        TagSet.objects.count(),
        LineSignature.objects.count(),
    )


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_an_admin_can_view_spend_facts_but_the_changelist_offers_no_delete(client_as, ada, spend, model):
    page = client_as(ada).get(url(model))
    assert page.status_code == 200
    assert page.context["cl"].result_count == model.objects.count() > 0
    assert "delete_selected" not in page.context["cl"].model_admin.get_actions(page.wsgi_request)
    html = page.content.decode()
    assert 'value="delete_selected"' not in html and url(model, "add") not in html
    assert "spend changes only through imports" in html and "attribution rules" in html


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_the_delete_and_add_pages_of_spend_facts_answer_403(client_as, ada, spend, model):
    client, pk = client_as(ada), model.objects.first().pk
    assert client.get(url(model, pk, "delete")).status_code == 403
    assert client.post(url(model, pk, "delete"), {"post": "yes"}).status_code == 403
    assert client.get(url(model, "add")).status_code == 403
    assert model.objects.filter(pk=pk).exists()


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_posting_a_change_form_or_the_bulk_delete_action_changes_nothing(client_as, ada, spend, model):
    client, obj = client_as(ada), model.objects.first()
    before = totals()
    view = client.get(url(model, obj.pk, "change"))
    assert view.status_code == 200 and "spend changes only through imports" in view.content.decode()
    changed = {
        f.name: "0"
        for f in model._meta.concrete_fields
        if f.name in ("reporting_cost", "cost", "input_tokens", "model")
    }
    assert client.post(url(model, obj.pk, "change"), {**changed, "tags": "{}"}).status_code == 403
    client.post(
        url(model),
        {"action": "delete_selected", "_selected_action": [o.pk for o in model.objects.all()], "post": "yes"},
    )
    assert totals() == before
    assert_rollup_equals_raw()


def test_an_account_with_spend_cannot_be_deleted_in_the_admin_taking_its_spend_along(
    client_as, ada, spend, openai_account
):
    # Deleting the account would delete its lines and rollups behind the importer's back: disable it instead.
    client = client_as(ada)
    page = client.get(f"/admin/finops/account/{openai_account.pk}/delete/").content.decode()
    assert "doesn't have permission to delete the following types of objects" in page and "usage line" in page
    client.post(f"/admin/finops/account/{openai_account.pk}/delete/", {"post": "yes"})
    assert Account.objects.filter(pk=openai_account.pk).exists() and UsageLine.objects.count() == 2
