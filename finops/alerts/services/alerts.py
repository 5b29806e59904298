"""Writes on alert preferences: a user mutes or unmutes the emails of one alert kind (events are still raised
and shown on the Alerts page; delivery records a `skipped` Notification for a muted user), or asks for a kind their
role does not get (finops.notify.recipients.ALSO_TO_SUBSCRIBERS: failing sources, the admins' by default)."""

from finops.models import AlertKind, AlertMute, AlertSubscription


class AlertMuteInvalid(ValueError):
    pass


def alert_mute_set(*, user, kind: str, muted: bool) -> bool:
    """Mute (muted=True) or unmute `kind` for `user`; idempotent. Returns whether the kind is now muted."""
    if kind not in AlertKind.values:
        raise AlertMuteInvalid(f"unknown alert kind {kind!r}")
    if muted:
        AlertMute.objects.get_or_create(user=user, kind=kind)
    else:
        AlertMute.objects.filter(user=user, kind=kind).delete()
    return muted


def alert_subscription_set(*, user, kind: str, subscribed: bool) -> bool:
    """Ask for (subscribed=True) or stop the emails of `kind` for `user`; idempotent. Only the kinds that go to a role
    by default and may go to anyone else can be asked for. Returns whether the user is now subscribed."""
    from finops.notify.recipients import ALSO_TO_SUBSCRIBERS

    if kind not in ALSO_TO_SUBSCRIBERS:
        raise AlertMuteInvalid(f"alert kind {kind!r} cannot be subscribed to")
    if subscribed:
        AlertSubscription.objects.get_or_create(user=user, kind=kind)
    else:
        AlertSubscription.objects.filter(user=user, kind=kind).delete()
    return subscribed
