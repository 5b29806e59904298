"""A real HTTP server on 127.0.0.1 that plays a provider's API for connector tests.

    with FakeProviderServer() as server:
        server.route("/v1/organization/costs", [json_page(...), json_page(...)])   # served in order, last repeats
        server.route("/v1/organization/usage/completions", [Reply(429, {"error": {...}}, {"Retry-After": "1"}), ...])
        ... HttpClient().get_json(server.url + "/v1/organization/costs", ...)
        server.requests  # [(method, path, query dict of lists, headers)]

Routes may also be a callable (query: dict[str, list[str]]) -> Reply, for cursor-driven pagination.
"""

import json
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class ServedInThread:
    """A real HTTP server on a free 127.0.0.1 port, serving from a thread while the `with` block runs."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()


class QuietHTTPServer(ThreadingHTTPServer):
    """A client that hung up (a timeout test, a test that ended) is not an error worth printing after the run."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)


@dataclass
class Reply:
    status: int = 200
    body: object = None  # dict/list -> JSON; str/bytes sent as they are (for malformed pages)
    headers: dict = field(default_factory=dict)


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict


class FakeProviderServer(ServedInThread):
    def __init__(self):
        self.routes: dict[str, object] = {}
        self.requests: list[Request] = []
        self._served: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                parts = urlsplit(self.path)
                query = parse_qs(parts.query, keep_blank_values=True)
                server.requests.append(Request("GET", parts.path, query, dict(self.headers)))
                reply = server._reply(parts.path, query)
                body = reply.body
                if isinstance(body, (dict, list)):
                    payload, ctype = json.dumps(body).encode(), "application/json"
                elif isinstance(body, str):
                    payload, ctype = body.encode(), "application/json"
                else:
                    payload, ctype = body or b"", "application/octet-stream"
                self.send_response(reply.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):  # keep test output quiet
                pass

        self._serve(Handler)

    def route(self, path: str, replies) -> None:
        self.routes[path] = replies
        self._served[path] = 0

    def _reply(self, path: str, query: dict) -> Reply:
        replies = self.routes.get(path)
        if replies is None:
            return Reply(404, {"error": {"message": f"no fake route for {path}"}})
        if callable(replies):
            return replies(query)
        index = min(self._served[path], len(replies) - 1)
        self._served[path] += 1
        reply = replies[index]
        return reply if isinstance(reply, Reply) else Reply(200, reply)
