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
        lines = [
            block.get("text", {}).get("text", "")
            for block in payload.get("blocks", [])
            if isinstance(block, dict) and isinstance(block.get("text"), dict)
        ]
        lines += [
            field.get("text", "")
            for block in payload.get("blocks", [])
            if isinstance(block, dict)
            for field in block.get("fields", [])
            if isinstance(field, dict)
        ]
        lines = [MRKDWN_LINK.sub(r"\2", line) for line in lines]  # Slack shows a <url|label> link as its label
        posted.append({"received_at": item["received_at"], "text": payload.get("text", ""), "lines": lines})
    return render(request, "demo/slack.html", {"posted": posted})
