"""The alerts domain's writes: mutes and subscriptions, caps, channels, and the one spend-changed signal."""
