"""The one spend forecast (issue 24, docs/forecast.md) and its back-test."""
