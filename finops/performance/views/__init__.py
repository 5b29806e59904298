"""The scorecard page and the outcome upload."""
