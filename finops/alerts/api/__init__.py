"""REST API v1 of the alerts domain: spend caps (`caps.py`) and alert channels (`channels.py`)."""
