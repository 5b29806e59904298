"""The egress policy for URLs people type (finops/core/egress.py): a team lead cannot make the server call the internal
network, at save or at send; redirects are not followed; one attempt ends at a wall-clock deadline.

The receivers here are real HTTP servers on 127.0.0.1 (and ::1), which the policy refuses: tests that deliver allow
127.0.0.0/8 through FINOPS_EGRESS_ALLOWED_NETWORKS, as an admin would for an internal receiver, and the refusals
are proven without it.
"""

import datetime as dt
import ipaddress
import socket
import ssl
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler

import pytest
from django.urls import reverse

from finops.alerts.events import event_raise
from finops.alerts.services.caps import CapInvalid, cap_create
from finops.alerts.services.channels import cap_channels_sync
from finops.core import crypto, egress
from finops.models import AlertEvent, AlertKind, Cap
from finops.notify.deliver import events_deliver
from tests.conftest import stored_cap
from tests.fakes.provider_server import ServedInThread
from tests.fakes.webhook_server import FakeWebhookServer

NOVEMBER = dt.date(2026, 11, 1)
JSON = {"content_type": "application/json"}
SECRET = "whsec-K9f2-egress-secret"
ALLOW_HINT = "an admin can allow a network with FINOPS_EGRESS_ALLOWED_NETWORKS"
LOOPBACK_V4 = [ipaddress.ip_network("127.0.0.0/8")]

# Every forbidden class, as a URL a team lead could type, and the words of its refusal.
FORBIDDEN = [
    ("http://127.0.0.1:18150/hook", "127.0.0.1 is a loopback address"),
    ("http://localhost:6379/", "localhost resolves to 127.0.0.1, a loopback address"),
    ("http://[::1]/hook", "::1 is a loopback address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is the cloud metadata address (link-local)"),
    ("http://169.254.10.20/", "169.254.10.20 is a link-local address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://172.16.3.4/", "172.16.3.4 is a private address"),
    ("http://192.168.1.10/", "192.168.1.10 is a private address"),
    ("http://100.64.0.1/", "100.64.0.1 is a private address"),
    ("http://[fd00::1]/", "fd00::1 is a unique-local address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is the IPv4-mapped form of 127.0.0.1, a loopback address"),
    ("http://[::ffff:a9fe:a9fe]/", "is the IPv4-mapped form of 169.254.169.254, the cloud metadata address"),
    ("http://[::ffff:10.1.2.3]/", "is the IPv4-mapped form of 10.1.2.3, a private address"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1:: is the 6to4 form of 127.0.0.1, a loopback address"),
]


def hooked_cap(team, url: str, name: str = "Hooked") -> Cap:
    """A cap stored as it may be in the database (a row written before the policy, or one whose name changed
    address since): straight through the ORM, so the send-time check is what is tested."""
    cap = stored_cap(
        name=name,
        scope="team",
        team=team,
        amount=Decimal("5000"),
        recipients=[],
        webhook_url=url,
        webhook_secret_ciphertext=crypto.encrypt(SECRET),
    )
    cap_channels_sync(cap)  # what the migration to channels (0034) does with such a row
    return cap


def raise_event(cap: Cap) -> AlertEvent:
    return event_raise(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{cap.id}",
        period_start=NOVEMBER,
        threshold=80,
        title="Support is at 82 % of its cap",
        details={"spent": "4100.00"},
        team=cap.team,
        cap=cap,
    )


def valid(**overrides) -> dict:
    return {
        "name": "Support monthly",
        "scope": "team",
        "target": "support",
        "amount": "100",
        "recipients": ["lead@example.com"],
        "webhook_secret": SECRET,
        **overrides,
    }


# --- at save: every write path ---


@pytest.mark.parametrize(("url", "words"), FORBIDDEN)
def test_every_forbidden_address_class_is_refused_at_save_naming_its_rule(ada, support_team, url, words):
    with pytest.raises(CapInvalid) as refused:
        cap_create(by=ada, **valid(webhook_url=url))

    message = refused.value.errors["webhook_url"]
    assert words in message and ALLOW_HINT in message
    assert not Cap.objects.exists()


def test_the_cap_form_refuses_a_name_resolving_to_loopback_and_saves_nothing(client_as, sam):
    response = client_as(sam).post(
        reverse("cap-create"),
        {
            "name": "Support",
            "scope": "team:support",
            "period": "month",
            "amount": "100",
            "thresholds": "80",
            "recipients": "role:team_leads",
            "webhook_url": "http://localhost:6379/",
            "webhook_secret": SECRET,
        },
    )

    assert response.status_code == 200 and not Cap.objects.exists()
    assert "localhost resolves to 127.0.0.1, a loopback address; " + ALLOW_HINT in response.content.decode()


def test_the_api_refuses_the_metadata_address_on_create_and_on_change(client_as, sam):
    client = client_as(sam)
    refused = client.post("/api/v1/caps", valid(webhook_url="http://169.254.169.254/latest/"), **JSON)
    assert refused.status_code == 400 and "cloud metadata address" in refused.json()["webhook_url"]

    without_webhook = {k: v for k, v in valid().items() if k != "webhook_secret"}
    created = client.post("/api/v1/caps", without_webhook, **JSON).json()
    changed = client.patch(
        f"/api/v1/caps/{created['id']}", {"webhook_url": "http://[::1]:8080/", "webhook_secret": SECRET}, **JSON
    )
    assert changed.status_code == 400 and "::1 is a loopback address" in changed.json()["webhook_url"]
    assert Cap.objects.get().webhook_url == ""


def test_apply_config_refuses_a_private_address_naming_the_entry_and_field(support_team, tmp_path, monkeypatch):
    from django.core.management import CommandError, call_command

    monkeypatch.setenv("HOOK_SECRET_FOR_TEST", SECRET)
    path = tmp_path / "finops.yaml"
    path.write_text(
        'caps:\n  - name: Support monthly\n    scope: {team: support}\n    amount: "100"\n'
        "    recipients: [lead@example.com]\n    webhook_url: http://10.0.0.1/hook\n"
        "    webhook_secret_env: HOOK_SECRET_FOR_TEST\n"
    )

    with pytest.raises(CommandError) as refused:
        call_command("apply_config", str(path))

    assert "caps[0] (name=Support monthly): webhook_url: Refused: 10.0.0.1 is a private address" in str(refused.value)
    assert not Cap.objects.exists()


def test_an_admin_allowed_network_is_accepted_and_a_name_that_does_not_resolve_now_is_kept_for_send(
    settings, ada, support_team
):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.20.0.0/16")]
    assert cap_create(by=ada, **valid(webhook_url="http://10.20.1.5/hook")).webhook_url == "http://10.20.1.5/hook"
    with pytest.raises(CapInvalid, match="10.21.0.1 is a private address"):
        cap_create(by=ada, **valid(name="Other", webhook_url="http://10.21.0.1/hook"))
    # DNS may be down or the receiver not up yet: accepted now, checked at every send.
    assert cap_create(by=ada, **valid(name="Later", webhook_url="https://receiver.invalid/hook")).webhook_url


# --- at send ---


def test_a_cap_saved_while_loopback_was_allowed_is_refused_at_send_once_the_network_is_no_longer_allowed(
    settings, ada, support_team
):
    """The address a URL reaches may change between save and send: here the allowed networks change (the hosts
    file or DNS changing under a name is the same check, made again at every send)."""
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    with FakeWebhookServer() as hook:
        cap = cap_create(by=ada, **valid(webhook_url=f"http://localhost:{hook.url.rsplit(':', 1)[1]}/hook"))
        event = raise_event(cap)
        settings.FINOPS_EGRESS_ALLOWED_NETWORKS = []
        events_deliver()

    event.refresh_from_db()
    assert hook.received == [] and event.state == AlertEvent.State.GAVE_UP
    error = event.notifications.get(channel="webhook").error
    assert "refused: localhost resolves to 127.0.0.1, a loopback address; " + ALLOW_HINT in error


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
def test_a_stored_webhook_to_loopback_is_refused_at_send_and_nothing_reaches_the_receiver(support_team, host):
    with FakeWebhookServer() as hook:
        port = hook.url.rsplit(":", 1)[1]
        event = raise_event(hooked_cap(support_team, f"http://{host}:{port}/hook"))
        events_deliver()

    event.refresh_from_db()
    assert hook.received == [] and event.state == AlertEvent.State.GAVE_UP
    assert "a loopback address" in event.notifications.get().error


def test_an_allowed_ipv6_loopback_receiver_is_delivered_to(settings, support_team):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = [ipaddress.ip_network("::1/128")]
    with FakeWebhookServer(host="::1") as hook:
        event = raise_event(hooked_cap(support_team, hook.url + "/hook"))
        events_deliver()

    event.refresh_from_db()
    assert event.state == AlertEvent.State.SENT and len(hook.received) == 1
    assert hook.received[0][1]["Host"] == hook.url.removeprefix("http://")


def test_the_name_is_resolved_once_and_the_host_header_keeps_the_name(settings, support_team, monkeypatch):
    """The connection goes to the address the check vetted: no second lookup a rebinding DNS server could answer
    differently. The resolver is observed, not replaced: every call still reaches the real one."""
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    lookups = []
    real_getaddrinfo = socket.getaddrinfo

    def observed(host, *args, **kwargs):
        lookups.append(host)
        return real_getaddrinfo(host, *args, **kwargs)

    with FakeWebhookServer() as hook:
        port = hook.url.rsplit(":", 1)[1]
        monkeypatch.setattr(socket, "getaddrinfo", observed)
        response = egress.post(
            f"http://localhost:{port}/hook", body=b"{}", headers={"Content-Type": "application/json"}
        )

    assert response.status == 200 and lookups == ["localhost"]
    assert hook.received[0][1]["Host"] == f"localhost:{port}"


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_recorded(settings, support_team, client_as, sam):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    with FakeWebhookServer() as hook:
        url = hook.url.replace("http://", "http://hookuser:hookpass%21@") + "/hook?token=tok-123"
        event = raise_event(hooked_cap(support_team, url))
        events_deliver()

    ((path, headers, _),) = hook.received
    assert path == "/hook?token=tok-123" and headers["Authorization"] == "Basic aG9va3VzZXI6aG9va3Bhc3Mh"
    notification = event.notifications.get()
    assert notification.recipient == hook.url + "/…" and notification.status == "sent"
    page = client_as(sam).get(reverse("alert-list")).content.decode()
    assert hook.url + "/…" in page  # sam leads Support: he may edit the cap, so he sees scheme and host
    assert "hookuser" not in page and "hookpass" not in page and "tok-123" not in page


def test_a_redirect_is_not_followed_and_the_delivery_gives_up(settings, support_team):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    with FakeWebhookServer(statuses=[302], location="http://169.254.169.254/latest/meta-data/") as hook:
        event = raise_event(hooked_cap(support_team, hook.url + "/hook"))
        events_deliver()

    event.refresh_from_db()
    assert len(hook.received) == 1 and event.state == AlertEvent.State.GAVE_UP
    assert "answered HTTP 302 (redirects are not followed)" in event.notifications.get().error


def test_a_receiver_trickling_header_lines_is_cut_at_the_deadline_and_retried_not_sent(settings, support_team):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    settings.FINOPS_EGRESS_DEADLINE_SECONDS = 1.5
    # One header line every 0.4 s: each read is quick, so only a deadline on the whole attempt can cut it.
    with FakeWebhookServer(trickle_every=0.4, trickle_lines=25) as hook:
        event = raise_event(hooked_cap(support_team, hook.url + "/hook"))
        started = time.monotonic()
        events_deliver()
        took = time.monotonic() - started

    event.refresh_from_db()
    assert len(hook.received) == 1 and 1.5 <= took < 4, took
    assert event.state == AlertEvent.State.FAILED and event.sent_at is None  # retried later, not sent
    notification = event.notifications.get()
    assert notification.status == "failed" and notification.error == f"{hook.url}/… timed out after 1.5 s"


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_the_allowed_networks_setting_refuses_to_start_with_a_wrong_entry(tmp_path):
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "FINOPS_EGRESS_ALLOWED_NETWORKS": "10.0.0.0/8,not-a-network",
        "DJANGO_SETTINGS_MODULE": "finops.settings",
        "SECRET_KEY": "x" * 50,
    }
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True
    )

    assert (
        result.returncode != 0
        and "FINOPS_EGRESS_ALLOWED_NETWORKS" in result.stderr
        and "not-a-network" in result.stderr
    )


# --- https: the vetted address, the name's certificate ---


def _certificate(tmp_path, name: str):
    """A self-signed certificate for `name` (and its key), as files; the client trusts it through SSL_CERT_FILE."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class _TlsReceiver(ServedInThread):
    """A real HTTPS receiver on 127.0.0.1 presenting `cert`; records the SNI name each client asked for."""

    def __init__(self, cert_path, key_path):
        self.server_names: list[str | None] = []
        self.received: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(dict(self.headers))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        context.sni_callback = lambda sock, name, ctx: receiver.server_names.append(name)
        self._serve(Handler)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self.port = self._httpd.server_address[1]


def test_https_connects_to_the_vetted_address_with_the_names_sni_and_certificate(settings, tmp_path, monkeypatch):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    cert_path, key_path = _certificate(tmp_path, "localhost")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))  # the client's trust store: this one certificate

    with _TlsReceiver(cert_path, key_path) as receiver:
        response = egress.post(f"https://localhost:{receiver.port}/hook", body=b"{}", headers={})

    assert response.status == 204 and receiver.server_names == ["localhost"]
    assert receiver.received[0]["Host"] == f"localhost:{receiver.port}"


def test_https_to_a_receiver_whose_certificate_names_another_host_is_refused_by_verification(
    settings, tmp_path, monkeypatch
):
    settings.FINOPS_EGRESS_ALLOWED_NETWORKS = LOOPBACK_V4
    cert_path, key_path = _certificate(tmp_path, "hooks.example.com")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))

    with _TlsReceiver(cert_path, key_path) as receiver, pytest.raises(egress.EgressFailed) as failed:
        egress.post(f"https://localhost:{receiver.port}/hook", body=b"{}", headers={})

    assert "SSLCertVerificationError" in str(failed.value) and receiver.received == []
