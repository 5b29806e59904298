"""The demo's stand-in for Slack (issue 25): the platform team's Slack channel posts its Block Kit messages to this
app's own /demo/slack/hook, which records them, and /demo/slack/ shows what arrived, as a Slack channel would.

A demo has no Slack workspace, and the alerts it raises while `load_demo` runs are delivered before the demo is
served: so `load_demo` serves the same hook at the demo's address for the length of the load (`stand_in`; the port
is free, runserver starts after it), and the served app answers it afterwards. Both append to one file
(FINOPS_DEMO_SLACK_LOG). The egress policy refuses loopback: the demo's settings allow exactly 127.0.0.1/32
(FINOPS_EGRESS_ALLOWED_NETWORKS, written by `manage.py demo_env` and passed by `make demo`); docs/alerts.md says so.
Only on with FINOPS_DEMO_SLACK (the demo's settings); everywhere else both pages answer 404.
"""

import datetime as dt
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

HOOK_PATH = "/demo/slack/hook"
_lock = threading.Lock()


def enabled() -> bool:
    return bool(getattr(settings, "FINOPS_DEMO_SLACK", False))


def hook_url() -> str:
    return settings.SITE_URL.rstrip("/") + HOOK_PATH


def _log() -> Path:
    return Path(settings.FINOPS_DEMO_SLACK_LOG)


def record(body: bytes) -> bool:
    """Keep one incoming-webhook message; False (nothing kept) for what Slack would refuse too."""
    try:
        payload = json.loads(body)
    except ValueError:
        return False
    if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
        return False  # Slack's incoming webhooks need `text` (the notification's fallback) beside the blocks
    line = json.dumps({"received_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "payload": payload})
    with _lock, _log().open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return True


def received() -> list[dict]:
    """The messages kept, newest first."""
    try:
        lines = _log().read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in reversed(lines) if line.strip()]


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ok = self.path == HOOK_PATH and record(body)
        self.send_response(200 if ok else (400 if self.path == HOOK_PATH else 404))
        answer = b"ok" if ok else b"invalid_payload"
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):  # the load prints its own summary
        pass


@contextmanager
def stand_in():
    """While the load runs, serve the hook at the demo's address (SITE_URL's host and port). If something answers
    there already (the demo is being served), it is the app itself, whose /demo/slack/hook records the same way."""
    if not enabled():
        yield None
        return
    parts = urlsplit(settings.SITE_URL)
    try:
        server = ThreadingHTTPServer((parts.hostname or "127.0.0.1", parts.port or 80), _Hook)
    except OSError:
        yield None
        return
    thread = threading.Thread(target=server.serve_forever, name="demo-slack", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
