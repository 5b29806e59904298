"""Alert kinds (docs/alerts.md): spend changed → which events to raise. Never sends (finops.notify delivers).

One module per alert kind, each with `KINDS` (the AlertKind values it raises) and `evaluate(*, today, change)`;
`evaluate.CHECKS` is the one list the evaluation walks, and `events.event_raise` the one place an event is
inserted. Adding a kind: a module here, a line in CHECKS, its email in finops/notify/alert_emails.py.

The rest of the alerts domain is here too (issue 27), by layer: models/ (alert events, caps, channels),
selectors/, services/ (the spend-changed signal among them), forms/, views/, api.py and tables.py.
"""
