"""A real HTTP server on 127.0.0.1 (or ::1) receiving webhook POSTs, for the webhook channel's tests.

    with FakeWebhookServer(statuses=[500, 200]) as hook:   # answers in order, the last repeats
        ... POST hook.url + "/hooks/finops"
        hook.received   # [(path, headers dict, raw body bytes)]

`trickle_every=2.0` answers the status line and then one header line every 2 s (`trickle_lines` of them), as a
receiver that holds a client with a slow drip; `location=` adds a Location header (a redirect); `host="::1"` serves
on the IPv6 loopback.
"""

import time
from http.server import BaseHTTPRequestHandler

from .provider_server import QuietHTTPServer, ServedInThread


class _IPv6Server(QuietHTTPServer):
    import socket as _socket

    address_family = _socket.AF_INET6


class FakeWebhookServer(ServedInThread):
    def __init__(
        self,
        statuses=(200,),
        *,
        trickle_every: float | None = None,
        trickle_lines: int = 30,
        location: str | None = None,
        host: str = "127.0.0.1",
    ):
        self.statuses = list(statuses)
        self.received: list[tuple[str, dict, bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.received.append((self.path, dict(self.headers), body))
                status = server.statuses[min(len(server.received) - 1, len(server.statuses) - 1)]
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                if trickle_every is not None:
                    self.flush_headers()
                    for line in range(trickle_lines):
                        time.sleep(trickle_every)
                        self.wfile.write(f"X-Drip-{line}: still here\r\n".encode())
                        self.wfile.flush()
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):  # keep test output quiet
                pass

        if host == "127.0.0.1":
            self._serve(Handler)
        else:
            self._serve_on(_IPv6Server((host, 0), Handler), f"http://[{host}]")

    def _serve_on(self, httpd, base: str) -> None:
        import threading

        self._httpd = httpd
        self.url = f"{base}:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
