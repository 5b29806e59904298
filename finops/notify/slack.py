"""The Slack transport: a POST to a Slack incoming webhook (https://hooks.slack.com/services/…) with a Block Kit
message: `text` (the notification's fallback) and `blocks` (a header with the title, a section with the reason and
a link to the page, a section of fields with the alert's figures — the email's facts, `emails.event_summary` —, a
context line with the kind). Slack answers 200 "ok"; 4xx ("invalid_payload",
"no_service") is final. Slack reads `&`, `<` and `>` as markup (`<!channel>` would ping everyone), so text from
names is escaped. tests/fixtures/slack/ holds the documented shape the tests compare with."""

from finops.models import AlertEvent, Channel, ChannelKind
from finops.notify import emails

from . import http
from .base import Target, Transport, register

HEADER_LIMIT = 150  # Block Kit's limit for a header's plain_text


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


FIELDS_LIMIT = 10  # Block Kit's limit for a section's fields


def slack_payload(*, title: str, kind_label: str, link: str | None, reason: str = "", facts=()) -> dict:
    header = title if len(title) <= HEADER_LIMIT else title[: HEADER_LIMIT - 1] + "…"
    section = escape(reason or title) + (f"\n<{link}|Open in FinOps>" if link else "")
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": header, "emoji": False}},
        {"type": "section", "text": {"type": "mrkdwn", "text": section}},
    ]
    if facts:
        fields = [{"type": "mrkdwn", "text": f"*{escape(label)}*\n{escape(value)}"} for label, value in facts]
        blocks.append({"type": "section", "fields": fields[:FIELDS_LIMIT]})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": escape(kind_label)}]})
    return {"text": f"[FinOps] {title}", "blocks": blocks}


@register
class SlackTransport(Transport):
    name = ChannelKind.SLACK

    def notify(self, event: AlertEvent, target: Target) -> None:
        payload = slack_payload(
            title=event.title,
            kind_label=event.get_kind_display(),
            link=emails.event_link(event),
            **emails.event_summary(event),
        )
        http.post(http.channel_url(target.via), http.json_body(payload), {})

    def test(self, channel: Channel, target: Target) -> None:
        payload = slack_payload(title=f"Test message to {channel.name}", kind_label="Test", link=None)
        http.post(http.channel_url(channel), http.json_body(payload), {})
