"""The cap and channel forms."""
