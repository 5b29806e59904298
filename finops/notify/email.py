"""The email channel: the message comes from finops.notify.emails (one function per kind), sent with Django's mail
backend (EMAIL_URL). Each send opens its own SMTP connection, so a server that is down fails this event's
recipients (recorded, retried) and never the loop: the next event tries again on its own."""

import smtplib

from django.conf import settings
from django.core.mail import EmailMessage

from finops.models import AlertEvent, Channel, ChannelKind
from finops.notify import emails

from .base import NotifyError, Target, Transport, register


@register
class EmailTransport(Transport):
    name = ChannelKind.EMAIL

    def notify(self, event: AlertEvent, target: Target) -> None:
        message_send(emails.alert_email(event, to=target.recipient), target.recipient)

    def test(self, channel: Channel, target: Target) -> None:
        message = EmailMessage(
            subject=f"[FinOps] Test message to {channel.name}",
            body=f"This address is on the FinOps alert channel {channel.name}: its alerts will arrive here.\n",
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=[target.recipient],
        )
        message_send(message, target.recipient)


def message_send(message, recipient: str) -> None:
    """Send one message, or raise NotifyError saying whether a retry can help (the monthly report's email too)."""
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        # The server answered and refused this address: 5xx is final (no such mailbox), 4xx is "try later".
        codes = [code for code, _reason in exc.recipients.values()]
        raise NotifyError(
            f"SMTP refused {recipient}: {_first_reason(exc)}",
            permanent=bool(codes) and all(500 <= code < 600 for code in codes),
        ) from None
    except smtplib.SMTPResponseException as exc:
        # 5xx replies are final, 4xx are "try later".
        raise NotifyError(
            f"SMTP {exc.smtp_code}: {_decode(exc.smtp_error)}", permanent=500 <= exc.smtp_code < 600
        ) from None
    except (
        smtplib.SMTPConnectError,
        smtplib.SMTPServerDisconnected,
        smtplib.SMTPHeloError,
        smtplib.SMTPAuthenticationError,
        smtplib.SMTPNotSupportedError,
        OSError,
    ) as exc:
        raise NotifyError(f"SMTP unavailable: {type(exc).__name__}: {exc}", channel_down=True) from None
    except smtplib.SMTPException as exc:
        raise NotifyError(f"SMTP error: {type(exc).__name__}: {exc}") from None


def _decode(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _first_reason(exc: smtplib.SMTPRecipientsRefused) -> str:
    for code, reason in exc.recipients.values():
        return f"{code} {_decode(reason)}"
    return "refused"
