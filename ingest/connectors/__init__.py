"""One package per connector kind (docs/architecture.md, "How to add a connector"); what they share sits here:
base.py (what every source kind produces, and how it fails), api_base.py, registry.py (kind -> its reader)."""
