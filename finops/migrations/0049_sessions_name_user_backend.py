# Sessions signed in before finops.web.auth.UserBackend replaced Django's ModelBackend in AUTHENTICATION_BACKENDS
# name ModelBackend, which Django's get_user no longer accepts: without this, everyone signed in when the upgrade is
# deployed would be signed out once. Each such session is rewritten to name UserBackend (the same users, the same
# password checks: UserBackend is ModelBackend with one read replaced), and back on a downgrade. A session that does
# not decode (another SECRET_KEY, corrupt) is left as it is: Django reads it as empty either way.

from django.db import migrations

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
USER_BACKEND = "finops.web.auth.UserBackend"


def _rename(apps, old: str, new: str) -> None:
    from django.contrib.auth import BACKEND_SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    Session = apps.get_model("sessions", "Session")
    store = SessionStore()
    changed = []
    for session in Session.objects.only("session_key", "session_data").iterator(chunk_size=2000):
        data = store.decode(session.session_data)
        if data.get(BACKEND_SESSION_KEY) == old:
            data[BACKEND_SESSION_KEY] = new
            session.session_data = store.encode(data)
            changed.append(session)
    Session.objects.bulk_update(changed, ["session_data"], batch_size=2000)


def sessions_name_user_backend(apps, schema_editor):
    _rename(apps, MODEL_BACKEND, USER_BACKEND)


def sessions_name_model_backend(apps, schema_editor):
    _rename(apps, USER_BACKEND, MODEL_BACKEND)


class Migration(migrations.Migration):
    dependencies = [
        ("finops", "0048_lead_unattributed_index"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(sessions_name_user_backend, sessions_name_model_backend)]
