"""A real SMTP server on 127.0.0.1 (aiosmtpd, in a thread) that keeps what it receives, for email tests.

server = FakeSmtpServer()          # a free port, nothing listening yet: sending fails like a server down
server.start() / server.stop()     # up and down again, on the same port
server.messages                    # [email.message.EmailMessage], parsed with the modern policy
server.refuse["x@example.com"] = "451 4.3.0 try later"   # answer RCPT TO for that address so
server.use(settings)               # point Django's SMTP backend at it (the pytest-django settings fixture)
"""

import email
import email.policy
import logging
import socket

from aiosmtpd.controller import Controller

logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd logs every SMTP line at INFO


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Keeper:
    def __init__(self, server: "FakeSmtpServer"):
        self.server = server

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        refusal = self.server.refuse.get(address)
        if refusal:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        message = email.message_from_bytes(envelope.original_content or envelope.content, policy=email.policy.default)
        self.server.messages.append(message)
        self.server.envelopes.append(list(envelope.rcpt_tos))
        return "250 Message accepted for delivery"


class FakeSmtpServer:
    def __init__(self, port: int | None = None):
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.messages: list[email.message.EmailMessage] = []
        self.envelopes: list[list[str]] = []
        self.refuse: dict[str, str] = {}  # address -> SMTP reply, e.g. "451 4.3.0 Mailbox busy, try later"
        self._controller: Controller | None = None

    def start(self) -> "FakeSmtpServer":
        self._controller = Controller(_Keeper(self), hostname=self.host, port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def use(self, settings) -> None:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = self.host, self.port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_TIMEOUT = 5

    @property
    def url(self) -> str:
        """As EMAIL_URL, for a child process."""
        return f"smtp://{self.host}:{self.port}"

    def to(self, address: str) -> list[email.message.EmailMessage]:
        return [m for m, rcpts in zip(self.messages, self.envelopes) if address in rcpts]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
