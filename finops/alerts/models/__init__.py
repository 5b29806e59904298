"""The alerts domain's tables: alert events and their notifications, caps, channels."""
