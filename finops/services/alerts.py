"""Writes on alert preferences: a user mutes or unmutes the emails of one alert kind (events are still raised
and shown on the Alerts page; delivery records a `skipped` Notification for a muted user)."""

from finops.models import AlertKind, AlertMute


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
