"""Uploading an export on the Sources page and through the API: kept, imported by a worker, failures shown."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Sum
from django.urls import reverse

from finops.models import IngestRun, Provider, UsageLine

CSV = (
    b"day,model,input_tokens,output_tokens,cost\n"
    b"2026-11-20,gpt-5-mini,1000,100,1.25\n"
    b"2026-11-21,gpt-5-mini,2000,200,2.50\n"
)


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def upload(client, **fields):
    return client.post(
        reverse("source-upload"),
        {"file": SimpleUploadedFile("usage.csv", CSV), **fields},
        HTTP_ACCEPT="application/json",
    )


def test_an_upload_to_a_new_account_creates_it_and_imports_the_file(client_as, ada, django_capture_on_commit_callbacks):
    provider = Provider.objects.get(slug="groq")
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_as(ada), new_name="groq-gateway", new_provider=provider.pk, new_connector="usage_csv")
    assert response.status_code == 202
    run = IngestRun.objects.get(pk=response.json()["run"])
    assert (run.status, run.trigger, run.lines_written) == ("succeeded", "upload", 2)
    assert run.account.name == "groq-gateway" and run.upload.name.endswith(".csv")
    assert UsageLine.objects.aggregate(c=Sum("cost"))["c"] == 3.75
    status = client_as(ada).get(response.json()["status_url"]).json()
    assert status["status"] == "succeeded" and status["lines_read"] == 2


def test_an_upload_without_an_account_or_a_new_one_is_refused_with_the_reason(client_as, ada):
    response = upload(client_as(ada), new_name="x")
    assert response.status_code == 400
    assert "a provider" in response.json()["error"] and "a file format" in response.json()["error"]
    assert not IngestRun.objects.exists()


def test_a_bad_file_fails_its_run_and_says_which_line(
    client_as, ada, openai_account, django_capture_on_commit_callbacks
):
    bad = b"day,model,input_tokens,output_tokens\n2026-11-20,gpt-5,-4,1\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(ada).post(
            reverse("source-upload"),
            {"file": SimpleUploadedFile("bad.csv", bad), "account": openai_account.pk},
            HTTP_ACCEPT="application/json",
        )
    run = IngestRun.objects.get(pk=response.json()["run"])
    assert run.status == "failed" and run.error == "bad.csv line 2: input_tokens is negative (-4)"
    # The uploader's error, shown to the uploader: the upload's status and the account's runs (the account's state
    # is unchanged: tests/test_refused_uploads.py).
    assert client_as(ada).get(response.json()["status_url"]).json()["status"] == "failed"
    page = client_as(ada).get(reverse("source-detail", args=[openai_account.pk])).content.decode()
    assert "bad.csv line 2: input_tokens is negative" in page


def test_the_api_accepts_an_export_for_a_file_account(
    client_as, ada, openai_account, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(ada).post(
            f"/api/v1/accounts/{openai_account.pk}/imports", {"file": SimpleUploadedFile("usage.csv", CSV)}
        )
    assert response.status_code == 202
    assert IngestRun.objects.get(pk=response.json()["id"]).status == "succeeded"


def test_the_sources_page_lists_unpriced_usage_so_someone_adds_a_price(client_as, fiona, openai_account):
    import io

    from ingest.services import usage_file_import

    csv = b"day,model,input_tokens,output_tokens\n2026-11-20,acme-internal-ft,5000,100\n"
    usage_file_import(account=openai_account, stream=io.BytesIO(csv), file_name="ft.csv")
    page = client_as(fiona).get(reverse("source-list")).content.decode()
    assert "acme-internal-ft" in page and "1 unpriced" in page


def test_each_source_shows_its_last_30_days_of_lines_spend_and_unpriced_lines(client_as, fiona, openai_account):
    import datetime as dt
    import io

    from ingest.services import usage_file_import

    day = lambda n: (dt.datetime.now(dt.UTC) - dt.timedelta(days=n)).date().isoformat()  # noqa: E731
    csv = (
        "day,model,input_tokens,output_tokens,cost\n"
        f"{day(2)},gpt-5-mini,1000,100,1.25\n{day(3)},gpt-5-mini,2000,200,2.50\n"
        f"{day(3)},acme-internal-ft,5000,100,\n"
        f"{day(45)},gpt-5-mini,1000,100,100.00\n"  # older than the 30 days shown
    )
    assert (
        usage_file_import(account=openai_account, stream=io.BytesIO(csv.encode()), file_name="u.csv").status
        == "succeeded"
    )
    rows = {row["account"].name: row for row in client_as(fiona).get(reverse("source-list")).context["accounts"]}
    assert (rows["openai-prod"]["lines"], rows["openai-prod"]["cost"], rows["openai-prod"]["unpriced"]) == (3, 3.75, 1)


# --- one upload policy for the page and the API (issue 15) ---


@pytest.fixture
def file_account(db):
    from finops.models import Account

    return Account.objects.create(
        name="openai-files", provider=Provider.objects.get(slug="openai"), connector="usage_csv"
    )


def api_upload(client, account, content: bytes):
    return client.post(
        reverse("api-account-imports", args=[account.pk]), {"file": SimpleUploadedFile("usage.csv", content)}
    )


def page_upload(client, account, content: bytes):
    return client.post(
        reverse("source-upload"),
        {"file": SimpleUploadedFile("usage.csv", content), "account": account.pk},
        HTTP_ACCEPT="application/json",
    )


def test_an_empty_file_is_refused_alike_by_the_page_and_the_api(client_as, ada, file_account):
    assert api_upload(client_as(ada), file_account, b"").json() == {"file": "The file is empty."}
    assert page_upload(client_as(ada), file_account, b"").json() == {"error": "file: The file is empty."}
    assert not IngestRun.objects.exists()


def test_a_file_over_the_limit_is_refused_alike_by_the_page_and_the_api(client_as, ada, file_account, settings):
    settings.FINOPS_MAX_UPLOAD_BYTES = 100
    # Refused from its Content-Length before the body is read (finops/web/batch_limits.py): 413, pointing to the
    # command.
    answer = api_upload(client_as(ada), file_account, CSV)
    assert answer.status_code == 413 and "manage.py import_usage" in answer.json()["detail"]
    answer = page_upload(client_as(ada), file_account, CSV)
    assert answer.status_code == 413 and "manage.py import_usage" in answer.content.decode()
    assert not IngestRun.objects.exists()


def test_uploaded_files_are_deleted_after_their_retention_and_the_runs_stay(
    client_as, ada, file_account, settings, django_capture_on_commit_callbacks
):
    import datetime as dt

    from django.utils import timezone

    from ingest.uploads import uploads_prune

    settings.FINOPS_UPLOAD_RETENTION_DAYS = 30
    with django_capture_on_commit_callbacks(execute=True):
        old, recent = (
            IngestRun.objects.get(pk=page_upload(client_as(ada), file_account, CSV).json()["run"]) for _ in range(2)
        )
    IngestRun.objects.filter(pk=old.pk).update(finished_at=timezone.now() - dt.timedelta(days=31))
    waiting = IngestRun.objects.create(account=file_account, trigger="upload", file_name="late.csv", status="queued")
    waiting.upload.save("late.csv", SimpleUploadedFile("late.csv", CSV))
    IngestRun.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - dt.timedelta(days=90))
    paths = {run.pk: run.upload.path for run in (old, recent, waiting)}

    assert uploads_prune() == 1
    old.refresh_from_db()
    assert (old.upload.name, old.status, old.lines_written, old.file_name) == ("", "succeeded", 2, "usage.csv")
    import os

    assert not os.path.exists(paths[old.pk])
    assert os.path.exists(paths[recent.pk]) and os.path.exists(paths[waiting.pk])
    assert UsageLine.objects.aggregate(c=Sum("cost"))["c"] == 3.75  # the data stays
