"""What a channel is: one small class behind a registry dict (healthchecks' habit).

A channel sends one event to one recipient (an address, a URL) and either returns or raises NotifyError.
`permanent=True` says a retry cannot help (a refused address, a 4xx from a webhook, a secret that no longer
decrypts); anything else (a server down, a timeout, a 5xx) is retried with backoff by finops.notify.deliver.
"""

import abc

from finops.models import AlertEvent


class NotifyError(Exception):
    def __init__(self, message: str, *, permanent: bool = False, channel_down: bool = False):
        super().__init__(message)
        self.permanent = permanent
        # The channel itself is unreachable (SMTP server down), not this recipient: the event's other recipients
        # on it are recorded as failed with the same error instead of each waiting for its own timeout.
        self.channel_down = channel_down


class Channel(abc.ABC):
    """One way to tell someone (email, webhook): `notify` sends one event to one recipient or raises NotifyError."""

    name: str = ""

    @abc.abstractmethod
    def notify(self, event: AlertEvent, recipient: str) -> None: ...


# Filled by the channel modules on import (finops.notify.channels imports them all).
CHANNELS: dict[str, Channel] = {}


def register(channel_class: type[Channel]) -> type[Channel]:
    CHANNELS[channel_class.name] = channel_class()
    return channel_class
