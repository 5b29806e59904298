"""The alert, cap and channel pages."""
