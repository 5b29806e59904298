"""Times are shown in the viewer's time zone; billing days and windows stay UTC days."""

import datetime as dt

from django.urls import reverse

from finops.models import IngestRun


def test_run_times_follow_the_users_zone_but_windows_stay_utc_days(client_as, ada, openai_account, settings):
    IngestRun.objects.create(
        account=openai_account,
        trigger="upload",
        status="succeeded",
        file_name="u.csv",
        started_at=dt.datetime(2026, 11, 20, 23, 30, tzinfo=dt.UTC),
        window_start=dt.datetime(2026, 11, 20, tzinfo=dt.UTC),
        window_end=dt.datetime(2026, 11, 21, tzinfo=dt.UTC),
    )
    url = reverse("source-detail", args=[openai_account.pk])
    page = client_as(ada).get(url).content.decode()
    assert "Started (UTC)" in page and "2026-11-20 23:30:00" in page

    ada.time_zone = "Asia/Tokyo"
    ada.save()
    page = client_as(ada).get(url).content.decode()
    assert "Started (Asia/Tokyo)" in page and "2026-11-21 08:30:00" in page
    assert "2026-11-20 → 2026-11-21 UTC" in page  # the window is a UTC day, whoever looks


def test_the_install_default_zone_applies_to_users_without_one(client_as, fiona, openai_account, settings):
    settings.FINOPS_DISPLAY_TIME_ZONE = "America/New_York"
    IngestRun.objects.create(
        account=openai_account,
        trigger="upload",
        status="succeeded",
        started_at=dt.datetime(2026, 11, 20, 3, 0, tzinfo=dt.UTC),
    )
    page = client_as(fiona).get(reverse("source-detail", args=[openai_account.pk])).content.decode()
    assert "Started (America/New_York)" in page and "2026-11-19 22:00:00" in page


def test_an_unknown_zone_falls_back_to_utc_instead_of_failing(client_as, fiona):
    fiona.time_zone = "Mars/Olympus_Mons"
    fiona.save()
    assert client_as(fiona).get(reverse("overview")).status_code == 200


def test_config_sets_a_users_time_zone_and_refuses_an_unknown_one(db):
    import pytest

    from finops.config import ConfigInvalid, config_apply
    from finops.models import User

    config_apply(path="u.yaml", text="users:\n  - {username: dana, time_zone: Europe/Paris}\n", environ={})
    assert User.objects.get(username="dana").time_zone == "Europe/Paris"
    with pytest.raises(
        ConfigInvalid, match=r"users\[0\] \(username=dana\): time_zone: 'Mars/Base' is not an IANA time zone"
    ):
        config_apply(path="u.yaml", text="users:\n  - {username: dana, time_zone: Mars/Base}\n", environ={})
