"""Send every due alert event once, however many workers run this at the same time: through the one outbox
(finops.notify.outbox), which claims, leases, settles and retries; this module says what sending an event is.

The claimant sends to every recipient not yet told (its Notification rows say who was), one Notification per
attempt and recipient; the event is sent when everyone was told, failed (retried with backoff) while any recipient
failed, and gave_up after MAX_ATTEMPTS or when only permanent errors are left. A channel's error is one event's
failure: the loop goes on to the next event.
"""

import datetime as dt
import logging
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import connections
from django.utils import timezone

from finops.models import AlertEvent, Notification

from . import emails
from .base import NotifyError, Target
from .outbox import Outbox
from .recipients import channel_targets, event_targets
from .transports import TRANSPORTS

log = logging.getLogger(__name__)

State = AlertEvent.State
HTTP_PARALLEL = 8  # HTTP receivers posted to at once, whichever events they are for
# Each try's record is the event's Notification rows, one per recipient, written while sending.
OUTBOX = Outbox(AlertEvent, label="alert event")


def event_claim(event_id: int, *, state: str, claimed_at, now: dt.datetime) -> str | None:
    """The claim token when this worker won the event, None when another did."""
    return OUTBOX.claim(event_id, state=state, claimed_at=claimed_at, now=now)


def events_deliver(now: dt.datetime | None = None) -> int:
    """Send what is due; returns how many events were sent (every recipient told) by this call."""
    return len(events_deliver_ids(now))


def events_deliver_ids(now: dt.datetime | None = None) -> list[int]:
    """Send what is due; the ids of the events this call sent (every recipient told).

    Every HTTP receiver (webhook, Slack, Teams) of every claimed event is posted to from one pool, so deliveries to
    different receivers do not wait on each other, within one event or across events: a receiver that trickles its
    answer holds its own delivery only, up to the egress deadline. Each event is settled as soon as its own posts
    are done. Emails go out from this thread, one SMTP conversation after another (one server)."""
    with ThreadPoolExecutor(max_workers=HTTP_PARALLEL, thread_name_prefix="alert-http") as pool:
        return OUTBOX.send_due_overlapped(now or timezone.now(), lambda event_id: event_start(event_id, pool))


class Sending:
    """One claimed event being sent: its emails are out, its HTTP posts are running in the pool; `finish` records
    them (in the calling thread: the database is not touched from the pool) and says what failed."""

    def __init__(self, event, attempt: int, posts: list, errors: list):
        self.event, self.attempt, self.posts, self.errors = event, attempt, posts, errors

    @property
    def futures(self) -> list[Future]:
        return [post for _target, post in self.posts]

    def done(self) -> bool:
        return all(post.done() for post in self.futures)

    def finish(self) -> NotifyError | None:
        for target, post in self.posts:
            _record(self.event, target, post.result(), self.attempt, self.errors)
        if not self.errors:
            return None
        return NotifyError(
            "; ".join(str(error) for error in self.errors), permanent=all(error.permanent for error in self.errors)
        )


def event_deliver(event_id: int) -> NotifyError | None:
    """Send one claimed event to everyone not yet told and wait for it; None when all were, else what failed."""
    with ThreadPoolExecutor(max_workers=HTTP_PARALLEL, thread_name_prefix="alert-http") as pool:
        return event_start(event_id, pool).finish()


def _record(event: AlertEvent, target: Target, error: NotifyError | None, attempt: int, errors: list) -> None:
    if error is not None:
        errors.append(error)
        log.warning("Alert event %s to %s by %s failed: %s", event.id, target.recipient, target.channel, error)
    Notification.objects.create(
        event=event,
        channel=target.channel,
        recipient=target.recipient,
        via=target.via,
        status=Notification.Status.FAILED if error else Notification.Status.SENT,
        error=str(error)[:2000] if error else "",
        attempt=attempt,
    )


def event_start(event_id: int, pool: ThreadPoolExecutor) -> Sending:
    """Start sending a claimed event to everyone not yet told: its HTTP posts submitted to `pool`, its emails sent
    (muted recipients recorded as skipped); the Sending to finish."""
    event = AlertEvent.objects.select_related("cap__team", "cap__workload__team", "contract", "team").get(id=event_id)
    attempt = event.attempts + 1
    told = {
        Target(channel, recipient, via=_Via(via_id) if via_id else None).told_key
        for channel, recipient, via_id in Notification.objects.filter(
            event=event, status__in=(Notification.Status.SENT, Notification.Status.SKIPPED)
        ).values_list("channel", "recipient", "via_id")
    }
    errors: list[NotifyError] = []
    pending = [t for t in event_targets(event) if t.told_key not in told]
    posts = [
        (target, pool.submit(_http_send, event, target))
        for target in pending
        if not target.muted and target.channel != "email"
    ]
    with emails.contexts_shared():  # the event's email context built once for all its email recipients
        _emails_send(event, [t for t in pending if t.muted or t.channel == "email"], attempt, errors)
    return Sending(event, attempt, posts, errors)


def _emails_send(event: AlertEvent, targets: list[Target], attempt: int, errors: list[NotifyError]) -> None:
    """Each email target in turn (muted ones recorded as skipped); a channel found down fails the rest at once."""
    down: dict[str, NotifyError] = {}  # channel -> the error that says it is unreachable for this attempt
    for target in targets:
        if target.muted:
            Notification.objects.create(
                event=event,
                channel=target.channel,
                recipient=target.recipient,
                via=target.via,
                status=Notification.Status.SKIPPED,
                error="muted this kind",
                attempt=attempt,
            )
            continue
        try:
            if target.channel in down:
                raise down[target.channel]
            TRANSPORTS[target.channel].notify(event, target)
        except NotifyError as exc:
            if exc.channel_down:
                down[target.channel] = exc
            _record(event, target, exc, attempt, errors)
        else:
            _record(event, target, None, attempt, errors)


def _http_send(event: AlertEvent, target: Target) -> NotifyError | None:
    """One HTTP target, in a pool thread: no database work here (the event and its channel are loaded), and any
    connection the thread opened anyway is closed when it ends."""
    try:
        TRANSPORTS[target.channel].notify(event, target)
    except NotifyError as exc:
        return exc
    except Exception as exc:  # a bug in one transport is that target's failure, retried like one
        log.exception("Alert event %s to %s by %s crashed", event.id, target.recipient, target.channel)
        return NotifyError(f"{type(exc).__name__}: {exc}")
    finally:
        connections.close_all()
    return None


class _Via:
    """A channel known by its id only (the told set of rows already written)."""

    def __init__(self, id: int):
        self.id = id


def channel_test(channel) -> list[str]:
    """Send a test message through one channel now (not an event: nothing is recorded); the recipients told."""
    targets = channel_targets(channel, None)
    if not targets:
        raise NotifyError("The channel names nobody (no address, or a role with no one in it).", permanent=True)
    for target in targets:
        TRANSPORTS[target.channel].test(channel, target)
    return [target.recipient for target in targets]
