"""Who receives the monthly TCO report by email (issue 14): the one write path for subscriptions, used by the
subscriptions page, the unsubscribe link and the monthly send.

Decisions (docs/report-email.md):
- Finance users (role finance, active, with an email) are subscribed by default: `subscriptions_default_ensure`
  creates their subscription when the monthly send runs (whoever created the user, and however: the admin, the
  config, a role change), unless one exists for them or their address already. An unsubscribed one stays
  inactive: the default never subscribes anyone again; only they (from the page) or an admin may.
- An address is one subscription (compared case-insensitively). An address that is a user's is linked to that
  user, and must be someone who may read the report (finops.core.access.can_see_reports): the report covers every
  team, so a member's address is refused with a message saying why.
- A finance user's own subscription cannot be removed, only deactivated: removed, the default would create it
  again at the next send.
"""

import datetime as dt

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from finops.core import access
from finops.models import ReportSubscription, User
from finops.reports.models import DEFAULT_DELIVERY_DAY
from finops.reports.selectors.subscriptions import default_recipients

DAY_MIN, DAY_MAX = 1, 28  # every month has a 28th: a day later than that would skip February


class SubscriptionError(ValueError):
    """A change the service refuses; `field` names the form field it concerns (None: the whole form)."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


def _address(email: str) -> str:
    email = (email or "").strip()
    if not email:
        raise SubscriptionError("Enter an email address.", field="email")
    try:
        validate_email(email)
    except ValidationError:
        raise SubscriptionError(f"“{email}” is not an email address (like name@example.com).", field="email") from None
    local, _, domain = email.rpartition("@")
    return f"{local}@{domain.lower()}"  # the domain is case-insensitive; the local part is the mailbox's own


def _day(day_of_month) -> int:
    try:
        day = int(day_of_month)
    except (TypeError, ValueError):
        raise SubscriptionError("The delivery day is a whole number from 1 to 28.", field="day_of_month") from None
    if not DAY_MIN <= day <= DAY_MAX:
        raise SubscriptionError(
            f"The delivery day must be from {DAY_MIN} to {DAY_MAX} (every month has those days); got {day}.",
            field="day_of_month",
        )
    return day


def _user_of(email: str) -> User | None:
    return User.objects.filter(email__iexact=email).order_by("id").first()


def subscription_add(*, email: str, day_of_month=DEFAULT_DELIVERY_DAY, by: User | None = None) -> ReportSubscription:
    """Add an address (admins). Refuses a malformed address, a day outside 1–28, an address already on the list
    (active or not: an unsubscribed one is reactivated explicitly, from its row) and a user who may not read
    the report."""
    address, day = _address(email), _day(day_of_month)
    existing = ReportSubscription.objects.filter(email__iexact=address).first()
    if existing is not None:
        state = (
            "is already subscribed"
            if existing.active
            else (
                f"unsubscribed on {existing.unsubscribed_at:%Y-%m-%d}"
                if existing.unsubscribed_at
                else "is on the list, inactive"
            )
        )
        hint = "" if existing.active else ": reactivate it from its row if they asked to receive the report again"
        raise SubscriptionError(f"{existing.email} {state}{hint}.", field="email")
    user = _user_of(address)
    if user is not None and not access.can_see_reports(user):
        raise SubscriptionError(
            f"{address} is {user.username}'s address, a {user.get_role_display().lower()}: the report "
            "covers every team, so only admins and finance receive it. Change their role first.",
            field="email",
        )
    try:
        with transaction.atomic():
            return ReportSubscription.objects.create(email=address, user=user, day_of_month=day, added_by=by)
    except IntegrityError:  # added by someone else a moment ago
        raise SubscriptionError(f"{address} is already subscribed.", field="email") from None


def subscription_set_day(*, subscription: ReportSubscription, day_of_month) -> ReportSubscription:
    subscription.day_of_month = _day(day_of_month)
    subscription.save(update_fields=["day_of_month"])
    return subscription


def subscription_set_active(
    *, subscription: ReportSubscription, active: bool, now: dt.datetime | None = None
) -> ReportSubscription:
    """Deactivate (the unsubscribe link, the page) or reactivate (the page: the recipient or an admin, on purpose).
    Deactivating twice keeps the first date. Reactivating voids the unsubscribe links of the emails sent before it
    (finops.notify.report_deliveries.unsubscribe_matches): a forwarded old email must not end the new subscription."""
    if subscription.active == active:
        return subscription
    now = now or timezone.now()
    subscription.active = active
    subscription.unsubscribed_at = None if active else now
    fields = ["active", "unsubscribed_at"]
    if active:
        subscription.resubscribed_at = now
        fields.append("resubscribed_at")
    subscription.save(update_fields=fields)
    return subscription


def subscription_unsubscribe(*, subscription: ReportSubscription, now: dt.datetime | None = None) -> ReportSubscription:
    """What the email's signed link does (finops.reports.views.subscriptions checks the link names this one)."""
    return subscription_set_active(subscription=subscription, active=False, now=now)


def subscription_delete(*, subscription: ReportSubscription) -> None:
    """Remove an address and its delivery history. A finance user's own subscription is deactivated instead."""
    if subscription.user_id and access.is_finance(subscription.user):
        raise SubscriptionError(
            f"{subscription.email} is {subscription.user.username}'s own subscription (finance "
            "users receive the report by default): deactivate it instead, or it would come back "
            "at the next send."
        )
    subscription.delete()


def subscription_for_user(*, user: User) -> ReportSubscription:
    """A finance user's own subscription, created (active, the default day) when they have none yet."""
    own = ReportSubscription.objects.filter(user=user).first()
    if own is None and user.email:
        own = ReportSubscription.objects.filter(email__iexact=user.email).first()
    if own is not None:
        return own
    if not access.is_finance(user) or not user.email:
        raise SubscriptionError(
            "Only finance users with an email address are subscribed by default; ask an admin to add your address."
        )
    subscriptions_default_ensure()
    return ReportSubscription.objects.get(email__iexact=user.email)


def _follow_address_changes() -> None:
    """A linked user's subscription follows their current address (when it is free), so the report never goes
    to an address they left. Old unsubscribe links stop matching: they named the old address."""
    for subscription in ReportSubscription.objects.exclude(user=None).select_related("user"):
        email = subscription.user.email
        if not email or email.lower() == subscription.email.lower():
            continue
        try:
            address = _address(email)
        except SubscriptionError:
            continue
        if not ReportSubscription.objects.filter(email__iexact=address).exists():
            ReportSubscription.objects.filter(id=subscription.id).update(email=address)


def subscriptions_default_ensure() -> int:
    """Create the default subscription of every finance user who has none (by user or by address). Safe to run
    in several processes at once: the address is unique and conflicts are ignored. Returns how many were missing.
    A user whose stored email is not an address is skipped (nothing could be delivered to it). Linked
    subscriptions first follow their users' current addresses."""
    _follow_address_changes()
    taken = {
        email.lower(): (pk, user_id)
        for pk, email, user_id in ReportSubscription.objects.values_list("id", "email", "user_id")
    }
    linked = {user_id for _pk, user_id in taken.values() if user_id}
    missing = []
    for user in default_recipients().order_by("id"):
        if user.id in linked:
            continue
        if user.email.lower() in taken:
            pk, user_id = taken[user.email.lower()]
            if user_id is None:  # an address added before its user existed: theirs now (active or not, as it was)
                ReportSubscription.objects.filter(id=pk, user=None).update(user=user)
            continue
        try:
            missing.append(ReportSubscription(email=_address(user.email), user=user))
        except SubscriptionError:
            continue
    ReportSubscription.objects.bulk_create(missing, ignore_conflicts=True)
    return len(missing)
