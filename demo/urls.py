"""The demo's own pages: its Slack stand-in (demo/slack.py). The root URLconf includes them; they answer 404 unless
the demo's settings turn the stand-in on (FINOPS_DEMO_SLACK)."""

from django.urls import path

from . import views

urlpatterns = [
    path("slack/", views.demo_slack_page, name="demo-slack"),
    path("slack/hook", views.demo_slack_hook, name="demo-slack-hook"),
]
