"""A FOCUS file account's services besides, or never, its provider's LLM inference (issue 21): set on the account's
page, through the API and by config; the next import keeps them; every change is audited."""

import io
import json

from django.urls import reverse

from finops.models import Account, AuditEntry, Provider
from ingest.services import usage_file_import
from tests.config_helpers import apply, write
from tests.ingest.focus_file_helpers import focus_csv

AWS_FILE = focus_csv(
    {
        "ProviderName": "AWS",
        "ServiceName": "Amazon Bedrock",
        "SkuMeter": "",
        "x_UsageType": "USE1-NovaLite-input-tokens",
        "BilledCost": "0.06",
    },
    {
        "ProviderName": "AWS",
        "ServiceName": "Amazon SageMaker",
        "SkuMeter": "",
        "ConsumedUnit": "Hours",
        "ConsumedQuantity": "24",
        "BilledCost": "11.04",
    },
    {
        "ProviderName": "AWS",
        "ServiceName": "Amazon EC2",
        "SkuMeter": "",
        "ConsumedUnit": "Hours",
        "ConsumedQuantity": "24",
        "BilledCost": "2.304",
    },
)


def bedrock(**settings) -> Account:
    return Account.objects.create(
        name="bedrock", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file", **settings
    )


def test_the_page_sets_the_services_and_the_next_import_keeps_them(client_as, ada):
    account = bedrock()
    page = client_as(ada).get(reverse("source-focus-services", args=[account.pk]))
    assert page.status_code == 200 and b"Also import these services" in page.content

    saved = client_as(ada).post(
        reverse("source-focus-services", args=[account.pk]),
        {"include": "Amazon SageMaker\n\namazon sagemaker\n", "exclude": ""},
    )
    assert saved.status_code == 302
    account.refresh_from_db()
    assert account.focus_services_include == ["Amazon SageMaker"] and account.focus_services_exclude == []
    entry = AuditEntry.objects.filter(entity_type=AuditEntry.Entity.ACCOUNT).latest("id")
    assert entry.after["focus_services_include"] == ["Amazon SageMaker"] and entry.actor == ada

    run = usage_file_import(account=account, stream=io.BytesIO(AWS_FILE), file_name="may.csv")
    assert run.status == "succeeded" and run.lines_written == 2
    assert run.left_out_summary == "left out 1 row, $2.30: Amazon EC2 $2.30"
    detail = client_as(ada).get(reverse("source-detail", args=[account.pk])).content.decode()
    assert "Left out 1 row, $2.30: Amazon EC2 $2.30" in detail and "and Amazon SageMaker" in detail


def test_a_service_both_included_and_excluded_is_refused(client_as, ada):
    account = bedrock()
    answer = client_as(ada).post(
        reverse("source-focus-services", args=[account.pk]), {"include": "Amazon EC2", "exclude": "amazon ec2"}
    )
    assert answer.status_code == 400 and b"both included and excluded" in answer.content
    account.refresh_from_db()
    assert account.focus_services_include == [] == account.focus_services_exclude


def test_only_admins_change_them_and_only_on_focus_accounts(client_as, fiona, ada, openai_account):
    account = bedrock()
    assert (
        client_as(fiona).post(reverse("source-focus-services", args=[account.pk]), {"include": "x"}).status_code == 403
    )
    assert client_as(ada).get(reverse("source-focus-services", args=[openai_account.pk])).status_code == 404


def test_the_api_reads_and_patches_them_and_a_run_says_what_it_left_out(client_as, ada, fiona):
    account = bedrock()
    url = f"/api/v1/accounts/{account.pk}"
    answer = client_as(ada).patch(
        url, json.dumps({"focus_services_exclude": ["Amazon Bedrock"]}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["focus_services_exclude"] == ["Amazon Bedrock"]
    assert (
        client_as(fiona)
        .patch(url, json.dumps({"focus_services_include": ["x"]}), content_type="application/json")
        .status_code
        == 403
    )

    account.refresh_from_db()
    run = usage_file_import(account=account, stream=io.BytesIO(AWS_FILE), file_name="may.csv")
    body = client_as(fiona).get(f"/api/v1/runs/{run.pk}").json()
    assert body["lines_written"] == 0 and body["left_out"]["rows"] == 3
    assert body["left_out_summary"] == (
        "left out 3 rows, $13.40: Amazon SageMaker $11.04, Amazon EC2 $2.30, "
        "Amazon Bedrock $0.06 (excluded by the account's settings)"
    )
    assert {e["service"]: e["cost"] for e in body["left_out"]["services"]} == {
        "Amazon SageMaker": "11.04",
        "Amazon EC2": "2.304",
        "Amazon Bedrock": "0.06",
    }


def test_config_applies_and_exports_them(tmp_path, db):
    apply(
        write(
            tmp_path,
            """
accounts:
  - {name: bedrock, provider: aws-bedrock, connector: focus_file, focus_services_include: [Amazon SageMaker]}
""",
        )
    )
    account = Account.objects.get(name="bedrock")
    assert account.focus_services_include == ["Amazon SageMaker"] and account.focus_services_exclude == []
    from finops.config.export import config_document

    exported = next(a for a in config_document()["accounts"] if a["name"] == "bedrock")
    assert exported["focus_services_include"] == ["Amazon SageMaker"] and "focus_services_exclude" not in exported
