"""What a transport is: one small class per channel kind behind a registry dict (healthchecks' habit). Adding a kind
of channel is a module in this package and a line in finops/notify/transports.py.

A transport sends one event (or a test message) to one target and either returns or raises NotifyError.
`permanent=True` says a retry cannot help (a refused address, a 4xx from a webhook, a secret that no longer
decrypts); anything else (a server down, a timeout, a 5xx) is retried with backoff by the outbox
(finops.notify.outbox).
"""

import abc
from dataclasses import dataclass

from finops.models import AlertEvent, Channel


class NotifyError(Exception):
    def __init__(self, message: str, *, permanent: bool = False, channel_down: bool = False):
        super().__init__(message)
        self.permanent = permanent
        # The channel itself is unreachable (SMTP server down), not this recipient: the event's other recipients
        # on it are recorded as failed with the same error instead of each waiting for its own timeout.
        self.channel_down = channel_down


@dataclass(frozen=True)
class Target:
    """One recipient of one event: `channel` the transport kind, `recipient` an address or a URL's scheme and host
    (never the URL), `via` the Channel row it came from (None: the built-in default recipients)."""

    channel: str
    recipient: str
    muted: bool = False
    via: Channel | None = None

    @property
    def told_key(self) -> tuple:
        # An address is told once per event whichever email channels name it; an HTTP channel once per row.
        if self.channel == "email":
            return ("email", self.recipient.lower())
        return (self.channel, self.via.id if self.via else None, self.recipient)


class Transport(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def notify(self, event: AlertEvent, target: Target) -> None: ...

    @abc.abstractmethod
    def test(self, channel: Channel, target: Target) -> None:
        """Send "this channel works" through the channel (the channel page's button)."""


TRANSPORTS: dict[str, Transport] = {}


def register(transport_class: type[Transport]) -> type[Transport]:
    TRANSPORTS[transport_class.name] = transport_class()
    return transport_class
