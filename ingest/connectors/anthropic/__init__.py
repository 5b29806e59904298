"""Anthropic's Admin API: the usage report per API key, priced by the cost report."""
