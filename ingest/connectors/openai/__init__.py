"""OpenAI's Administration API: costs joined onto usage (api.py), one result's line items (lines.py)."""
