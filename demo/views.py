"""The demo's Slack stand-in as pages (demo/slack.py): POST /demo/slack/hook records an incoming-webhook
message, /demo/slack/ shows what arrived. 404 unless the demo's settings turn it on (FINOPS_DEMO_SLACK)."""

import re

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST, require_safe

from demo import slack

MRKDWN_LINK = re.compile(r"<([^|>]+)\|([^>]+)>")


def _shown(mrkdwn: str) -> str:
    """Slack shows a <url|label> link as its label, *bold* without its stars, and &lt; &gt; &amp; as < > &."""
    text = MRKDWN_LINK.sub(r"\2", mrkdwn).replace("*", "")
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@csrf_exempt
@login_not_required
@require_POST
def demo_slack_hook(request):
    if not slack.enabled():
        raise Http404
    if not slack.record(request.body):
        return HttpResponse("invalid_payload", status=400, content_type="text/plain")
    return HttpResponse("ok", content_type="text/plain")


@require_safe
def demo_slack_page(request):
    if not slack.enabled():
        raise Http404
    posted = []
    for item in slack.received():
        payload = item["payload"]
        blocks = [b for b in payload.get("blocks", []) if isinstance(b, dict)]
        # As Slack shows a Block Kit message: the header, each section's text and fields, the context; the top-level
        # `text` only when there are no blocks (Slack uses it for the notification).
        title = next((b["text"].get("text", "") for b in blocks if b.get("type") == "header" and b.get("text")), "")
        lines, fields, context = [], [], []
        for block in blocks:
            if block.get("type") == "section":
                if isinstance(block.get("text"), dict):
                    lines.append(block["text"].get("text", ""))
                fields += [f.get("text", "") for f in block.get("fields", []) if isinstance(f, dict)]
            elif block.get("type") == "context":
                context += [e.get("text", "") for e in block.get("elements", []) if isinstance(e, dict)]
        posted.append(
            {
                "received_at": item["received_at"],
                "title": title or payload.get("text", ""),
                "lines": [_shown(line) for line in lines],
                "fields": [_shown(field).split("\n", 1) for field in fields],
                "context": " · ".join(_shown(c) for c in context),
            }
        )
    return render(request, "demo/slack.html", {"posted": posted})
