"""Send every due event once, however many workers run this at the same time.

An event is due when it is pending, or failed and its next attempt is due, or left `sending` by a worker that
died more than LEASE ago. Each is claimed with a conditional UPDATE on the state and claimed_at read a moment
before: exactly one worker's UPDATE matches, the others see 0 rows and move on. The claimant sends to every
recipient not yet told (its Notification rows say who was), one Notification per attempt and recipient, then
settles the event: sent when everyone was told; else failed with a next attempt after an exponential backoff
with jitter, and gave_up after MAX_ATTEMPTS or when only permanent errors are left. A channel's error is one
event's failure: the loop goes on to the next event.
"""

import datetime as dt
import logging
import random
import uuid
from concurrent.futures import ThreadPoolExecutor

from django.db import connections
from django.db.models import Q
from django.utils import timezone

from finops.models import AlertEvent, Notification

from .base import NotifyError, Target
from .recipients import channel_targets, event_targets
from .transports import TRANSPORTS

log = logging.getLogger(__name__)

State = AlertEvent.State
LEASE = dt.timedelta(minutes=10)  # a claim older than this belonged to a worker that died mid-send
MAX_ATTEMPTS = 8
BACKOFF_BASE = 60  # seconds before the first retry; doubles each attempt
BACKOFF_MAX = 3600
BATCH = 200
HTTP_PARALLEL = 8  # HTTP receivers of one event posted to at once


def backoff(attempt: int) -> dt.timedelta:
    """60 s, 2 min, 4 min … capped at an hour, each ×0.75–1 so retries of many events spread out."""
    seconds = min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (attempt - 1))
    return dt.timedelta(seconds=seconds * random.uniform(0.75, 1.0))


def due_events(now: dt.datetime):
    due = Q(state__in=(State.PENDING, State.FAILED)) & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
    abandoned = Q(state=State.SENDING, claimed_at__lt=now - LEASE)
    return AlertEvent.objects.filter(due | abandoned).order_by("created_at", "id")


def event_claim(event_id: int, *, state: str, claimed_at, now: dt.datetime) -> str | None:
    """The claim token when this worker won the event, None when another did."""
    token = str(uuid.uuid4())
    won = AlertEvent.objects.filter(id=event_id, state=state, claimed_at=claimed_at).update(
        state=State.SENDING, claimed_at=now, claim_token=token
    )
    return token if won == 1 else None


def events_deliver(now: dt.datetime | None = None) -> int:
    """Send what is due; returns how many events were sent (every recipient told) by this call."""
    return len(events_deliver_ids(now))


def events_deliver_ids(now: dt.datetime | None = None) -> list[int]:
    """Send what is due; the ids of the events this call sent (every recipient told)."""
    now = now or timezone.now()
    sent = []
    for event_id, state, claimed_at in due_events(now).values_list("id", "state", "claimed_at")[:BATCH]:
        token = event_claim(event_id, state=state, claimed_at=claimed_at, now=now)
        if token is None:
            continue
        try:
            if event_deliver(event_id, token=token, now=now) == State.SENT:
                sent.append(event_id)
        except Exception:  # a bug in one event's rendering must not stop the others; it is retried like a failure
            log.exception("Delivering alert event %s failed", event_id)
            _settle(event_id, token=token, now=now, failed=True, permanent=False)
    return sent


def event_deliver(event_id: int, *, token: str, now: dt.datetime) -> str:
    """Send a claimed event to everyone not yet told; returns the state it was left in."""
    event = AlertEvent.objects.select_related("cap__team", "cap__workload__team", "contract", "team").get(id=event_id)
    attempt = event.attempts + 1
    told = {
        Target(channel, recipient, via=_Via(via_id) if via_id else None).told_key
        for channel, recipient, via_id in Notification.objects.filter(
            event=event, status__in=(Notification.Status.SENT, Notification.Status.SKIPPED)
        ).values_list("channel", "recipient", "via_id")
    }
    errors: list[NotifyError] = []
    down: dict[str, NotifyError] = {}  # channel -> the error that says it is unreachable for this attempt

    def record(target: Target, error: NotifyError | None) -> None:
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

    pending = [t for t in event_targets(event) if t.told_key not in told]
    # HTTP receivers (webhook, Slack, Teams) are posted to at the same time, each bounded by the egress deadline,
    # while the emails go out: a receiver that trickles its answer holds only its own delivery.
    with ThreadPoolExecutor(max_workers=HTTP_PARALLEL) as pool:
        posts = [
            (target, pool.submit(_http_send, event, target))
            for target in pending
            if not target.muted and target.channel != "email"
        ]
        for target in (t for t in pending if t.muted or t.channel == "email"):
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
                record(target, exc)
            else:
                record(target, None)
        for target, post in posts:
            record(target, post.result())
    return _settle(
        event.id,
        token=token,
        now=now,
        failed=bool(errors),
        permanent=bool(errors) and all(error.permanent for error in errors),
    )


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


def _settle(event_id: int, *, token: str, now: dt.datetime, failed: bool, permanent: bool) -> str:
    """Leave the event sent, failed (with its next attempt) or gave_up; only while this worker's claim holds."""
    attempts = AlertEvent.objects.filter(id=event_id).values_list("attempts", flat=True).first() or 0
    attempts += 1
    if not failed:
        fields = {"state": State.SENT, "sent_at": now, "next_attempt_at": None}
    elif permanent or attempts >= MAX_ATTEMPTS:
        fields = {"state": State.GAVE_UP, "next_attempt_at": None}
    else:
        fields = {"state": State.FAILED, "next_attempt_at": now + backoff(attempts)}
    AlertEvent.objects.filter(id=event_id, state=State.SENDING, claim_token=token).update(attempts=attempts, **fields)
    return fields["state"]
