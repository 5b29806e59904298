"""The settings a bench's in-process test client serves pages under, named once for every bench that times pages."""

from django.test import override_settings


def served_in_process():
    """Pages answered to Django's test client as production answers them (DEBUG off, no HTTPS redirect), with static
    files resolved without a collectstatic run. A new decorator each call: one override_settings object is not
    re-entrant."""
    return override_settings(
        ALLOWED_HOSTS=["testserver"],
        SECURE_SSL_REDIRECT=False,
        DEBUG=False,
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        },
    )
