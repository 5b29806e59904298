"""Delivery (docs/alerts.md, docs/report-email.md): the one outbox (`outbox.py`: due rows, claim with a lease,
settle, retry with backoff, one attempt record per try) and what goes through it: alert events (`deliver.py`, one
Notification row per attempt and recipient, sent per channel by the transports) and the monthly report's emails
(`report_deliveries.py`). `deliver.events_deliver()` and `report_deliveries.reports_send()` are the entry points
(the `deliver_alerts` and `send_reports` tasks)."""
