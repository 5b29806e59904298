"""The one outbox (issue 25): a row sent once however many workers and beats run. Alert events
(finops.notify.deliver) and the monthly report's deliveries (finops.notify.report_deliveries) both go through
it; what is sent and to whom is theirs, claiming, the lease, settling, retrying with backoff and recording each try
is here, once, so the two cannot drift apart again.

A row (a model with `State` pending/sending/sent/failed/gave_up, `claimed_at`, `claim_token`, `attempts`,
`next_attempt_at`, `sent_at`, `created_at`) is due when it is pending, or failed and its next attempt is due, or left
`sending` by a sender that died more than LEASE ago. Each is claimed with a conditional UPDATE on the state and
claimed_at read a moment before: exactly one sender's UPDATE matches, the others see 0 rows and move on. The
claimant sends it, then settles it in one transaction with the record of that try: sent; failed with a next attempt
after an exponential backoff with jitter; gave_up after MAX_ATTEMPTS or when the error says retrying cannot help.
The settle only lands while the claim holds (its token), so a sender whose lease ran out cannot overwrite the
sender that took the row over. One row's error, or a bug while sending it, is that row's failure: the loop goes on.
"""

import datetime as dt
import logging
import random
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Protocol

from django.db import models, transaction
from django.db.models import Q

from .base import NotifyError

log = logging.getLogger(__name__)

LEASE = dt.timedelta(minutes=10)  # a claim older than this belonged to a sender that died mid-send
MAX_ATTEMPTS = 8
BACKOFF_BASE = 60  # seconds before the first retry; doubles each attempt
BACKOFF_MAX = 3600
BATCH = 200  # rows one call sends at most: the next beat takes the rest

# The row's id and its error (None: sent); the row is read again by the sender, which knows what to load.
Send = Callable[[int], NotifyError | None]
# The try's record (attempt number from 1, error or None), written in the settle's transaction.
Record = Callable[[int, int, NotifyError | None], None]


class Started(Protocol):
    """A row whose sending has begun (send_due_overlapped): its futures, and `finish` for its error or None."""

    @property
    def futures(self) -> list[Future]: ...

    def done(self) -> bool: ...

    def finish(self) -> NotifyError | None: ...


def backoff(attempt: int) -> dt.timedelta:
    """60 s, 2 min, 4 min … capped at an hour, each ×0.75–1 so retries of many rows spread out."""
    seconds = min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (attempt - 1))
    return dt.timedelta(seconds=seconds * random.uniform(0.75, 1.0))


class Outbox:
    """The outbox of one model. `record`, when given, writes one attempt row per try (the report's
    ReportSendAttempt); alert events record theirs per recipient while sending (Notification rows)."""

    def __init__(self, model: type[models.Model], *, label: str, record: Record | None = None):
        self.model = model
        self.label = label
        self.record = record
        self.State = model.State

    def due(self, now: dt.datetime, rows: models.QuerySet | None = None) -> models.QuerySet:
        """The rows (of `rows`, when given) due now, oldest first."""
        State = self.State
        rows = self.model.objects.all() if rows is None else rows
        waiting = Q(state__in=(State.PENDING, State.FAILED)) & (
            Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
        )
        abandoned = Q(state=State.SENDING, claimed_at__lt=now - LEASE)
        return rows.filter(waiting | abandoned).order_by("created_at", "id")

    def claim(self, row_id: int, *, state: str, claimed_at: dt.datetime | None, now: dt.datetime) -> str | None:
        """The claim token when this sender won the row, None when another did."""
        token = str(uuid.uuid4())
        won = self.model.objects.filter(id=row_id, state=state, claimed_at=claimed_at).update(
            state=self.State.SENDING, claimed_at=now, claim_token=token
        )
        return token if won == 1 else None

    def settle(self, row_id: int, *, token: str, now: dt.datetime, error: NotifyError | None) -> str:
        """Record the try and leave the row sent, failed (with its next attempt) or gave_up; the state it is left
        in. The row changes only while this sender's claim holds; the try is recorded either way (it happened)."""
        State = self.State
        with transaction.atomic():
            attempts = (self.model.objects.filter(id=row_id).values_list("attempts", flat=True).first() or 0) + 1
            if self.record is not None:
                self.record(row_id, attempts, error)
            if error is None:
                fields = {"state": State.SENT, "sent_at": now, "next_attempt_at": None}
            elif error.permanent or attempts >= MAX_ATTEMPTS:
                fields = {"state": State.GAVE_UP, "next_attempt_at": None}
            else:
                fields = {"state": State.FAILED, "next_attempt_at": now + backoff(attempts)}
            self.model.objects.filter(id=row_id, state=State.SENDING, claim_token=token).update(
                attempts=attempts, **fields
            )
        return fields["state"]

    def send_due(self, now: dt.datetime, send: Send, *, rows: models.QuerySet | None = None) -> list[int]:
        """Claim, send and settle what is due (of `rows`, when given), up to BATCH; the ids this call sent."""
        sent = []
        for row_id, state, claimed_at in self.due(now, rows).values_list("id", "state", "claimed_at")[:BATCH]:
            token = self.claim(row_id, state=state, claimed_at=claimed_at, now=now)
            if token is None:
                continue
            try:
                error = send(row_id)
            except Exception as exc:  # a bug sending one row must not stop the others; it is retried like a failure
                log.exception("Sending %s %s failed", self.label, row_id)
                error = NotifyError(f"{type(exc).__name__}: {exc}")
            if self.settle(row_id, token=token, now=now, error=error) == self.State.SENT:
                sent.append(row_id)
        return sent

    def send_due_overlapped(
        self, now: dt.datetime, start: Callable[[int], Started], *, rows: models.QuerySet | None = None
    ) -> list[int]:
        """Like send_due, but every claimed row's sending is started before any is waited for, and each row is
        settled as soon as its own sending is done: one slow receiver holds its row only. Claiming, starting,
        finishing and settling run in this thread (the database); only what `start` submitted runs elsewhere."""
        sent: list[int] = []
        running: dict[int, tuple[str, Started]] = {}
        for row_id, state, claimed_at in self.due(now, rows).values_list("id", "state", "claimed_at")[:BATCH]:
            token = self.claim(row_id, state=state, claimed_at=claimed_at, now=now)
            if token is None:
                continue
            try:
                running[row_id] = (token, start(row_id))
            except Exception as exc:  # a bug starting one row must not stop the others; retried like a failure
                log.exception("Sending %s %s failed", self.label, row_id)
                self.settle(row_id, token=token, now=now, error=NotifyError(f"{type(exc).__name__}: {exc}"))
        while running:
            finished = [row_id for row_id, (_token, started) in running.items() if started.done()]
            if not finished:
                wait([f for _token, started in running.values() for f in started.futures], return_when=FIRST_COMPLETED)
                continue
            for row_id in finished:
                token, started = running.pop(row_id)
                try:
                    error = started.finish()
                except Exception as exc:
                    log.exception("Sending %s %s failed", self.label, row_id)
                    error = NotifyError(f"{type(exc).__name__}: {exc}")
                if self.settle(row_id, token=token, now=now, error=error) == self.State.SENT:
                    sent.append(row_id)
        return sent
