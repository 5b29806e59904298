"""A real HTTP server on 127.0.0.1 receiving webhook POSTs, for the webhook channel's tests.

    with FakeWebhookServer(statuses=[500, 200]) as hook:   # answers in order, the last repeats
        ... POST hook.url + "/hooks/finops"
        hook.received   # [(path, headers dict, raw body bytes)]
"""

from http.server import BaseHTTPRequestHandler

from .provider_server import ServedInThread


class FakeWebhookServer(ServedInThread):
    def __init__(self, statuses=(200,)):
        self.statuses = list(statuses)
        self.received: list[tuple[str, dict, bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.received.append((self.path, dict(self.headers), body))
                status = server.statuses[min(len(server.received) - 1, len(server.statuses) - 1)]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):  # keep test output quiet
                pass

        self._serve(Handler)
