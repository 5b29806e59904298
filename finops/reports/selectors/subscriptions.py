"""Reads for the report subscriptions page (issue 14): who receives the monthly report, on which day, and how
its latest delivery went. Finance users without a subscription yet show as subscribed by default (their row is
created at the next send, finops.reports.services.subscriptions)."""

from finops.models import ReportDelivery, ReportSubscription, User


def default_recipients():
    """Finance users the report goes to by default: active, with an email."""
    return User.objects.filter(role=User.Role.FINANCE, is_active=True).exclude(email="")


def _latest_deliveries(subscription_ids) -> dict[int, ReportDelivery]:
    latest = {}
    for delivery in (
        ReportDelivery.objects.filter(subscription_id__in=subscription_ids)
        .select_related("snapshot")
        .order_by("subscription_id", "-month", "-id")
    ):
        latest.setdefault(delivery.subscription_id, delivery)
    return latest


def subscription_rows(subscriptions) -> list[dict]:
    subscriptions = list(subscriptions.select_related("user", "added_by"))
    latest = _latest_deliveries([s.id for s in subscriptions])
    return [{"subscription": s, "latest": latest.get(s.id), "default": False} for s in subscriptions]


def pending_defaults(users=None) -> list[User]:
    """Finance users (of `users`, default all) with no subscription yet: subscribed by default at the next send."""
    taken = {email.lower() for email in ReportSubscription.objects.values_list("email", flat=True)}
    linked = set(ReportSubscription.objects.exclude(user=None).values_list("user_id", flat=True))
    candidates = default_recipients() if users is None else default_recipients().filter(id__in=[u.id for u in users])
    return [u for u in candidates.order_by("username") if u.id not in linked and u.email.lower() not in taken]


def own_subscription(user: User) -> ReportSubscription | None:
    return ReportSubscription.objects.filter(user=user).first() or (
        ReportSubscription.objects.filter(email__iexact=user.email).first() if user.email else None
    )


def month_recipients(month) -> list[dict]:
    """Who was sent `month`'s report and which version (the report page's "Sent to"): per subscription, the
    latest version it was sent (the monthly email or a restated one) and the newest delivery still on its way."""
    rows: dict[int, dict] = {}
    deliveries = (
        ReportDelivery.objects.filter(month=month)
        .select_related("subscription", "snapshot", "restates")
        .order_by("subscription__email", "snapshot__version", "id")
    )
    for delivery in deliveries:
        row = rows.setdefault(
            delivery.subscription_id, {"email": delivery.subscription.email, "sent": None, "waiting": None}
        )
        if delivery.state == ReportDelivery.State.SENT:
            row["sent"] = delivery
        else:
            row["waiting"] = delivery
    for row in rows.values():  # a delivery older than the version sent is not waiting any more
        if row["waiting"] and row["sent"] and row["waiting"].snapshot.version <= row["sent"].snapshot.version:
            row["waiting"] = None
    return list(rows.values())
