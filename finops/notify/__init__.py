"""Alert delivery (docs/architecture.md alert pipeline): claim each due event once, send it per channel, one
Notification
row per attempt and recipient. `deliver.events_deliver()` is the entry point (the `deliver_alerts` task)."""
