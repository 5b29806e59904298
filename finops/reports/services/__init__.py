"""Writes of the monthly report: publishing a month, subscriptions."""
