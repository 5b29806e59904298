"""The Microsoft Teams transport: a POST to a Teams incoming webhook or a Workflows ("When a Teams webhook request
is received") URL with a message carrying one Adaptive Card: `{"type": "message", "attachments": [{"contentType":
"application/vnd.microsoft.card.adaptive", "contentUrl": null, "content": <AdaptiveCard 1.4>}]}`. The card holds
the title, the kind, the reason and the alert's figures as a FactSet (the email's facts, `emails.event_summary`) and
a button to the page. Workflows answer 202, incoming webhooks 200: any 2xx is sent.
tests/fixtures/teams/ holds the documented shape the tests compare with."""

from finops.models import AlertEvent, Channel, ChannelKind
from finops.notify import emails

from . import http
from .base import Target, Transport, register

CARD_VERSION = "1.4"


def teams_payload(*, title: str, kind_label: str, link: str | None, reason: str = "", facts=()) -> dict:
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "body": [
            {"type": "TextBlock", "text": title, "weight": "Bolder", "size": "Medium", "wrap": True},
            {"type": "TextBlock", "text": kind_label, "isSubtle": True, "spacing": "None", "wrap": True},
        ],
    }
    if reason:
        card["body"].append({"type": "TextBlock", "text": reason, "wrap": True})
    if facts:
        card["body"].append({"type": "FactSet", "facts": [{"title": label, "value": value} for label, value in facts]})
    if link:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Open in FinOps", "url": link}]
    return {
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
        ],
    }


@register
class TeamsTransport(Transport):
    name = ChannelKind.TEAMS

    def notify(self, event: AlertEvent, target: Target) -> None:
        payload = teams_payload(
            title=event.title,
            kind_label=event.get_kind_display(),
            link=emails.event_link(event),
            **emails.event_summary(event),
        )
        http.post(http.channel_url(target.via), http.json_body(payload), {})

    def test(self, channel: Channel, target: Target) -> None:
        payload = teams_payload(title=f"Test message to {channel.name}", kind_label="Test", link=None)
        http.post(http.channel_url(channel), http.json_body(payload), {})
