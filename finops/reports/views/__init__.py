"""The report's page and files, and the subscriptions page."""
