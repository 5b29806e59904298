"""REST API v1 of unit economics and performance: outcomes, evals, metrics, the scorecard."""
