"""REST API v1 of spend and attribution: the spend report (`spend.py`), attribution rules and their
re-attributions (`rules.py`), the FOCUS usage export (`focus.py`)."""
