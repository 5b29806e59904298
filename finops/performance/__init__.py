"""Unit economics and performance (issue 12): mergeable latency distributions, what is measured of a group of
requests, and latency as teams report it; and, as one domain package (issue 27), outcome counts, eval scores and
reported metrics (models/, selectors/, services/), the scorecard and outcome pages (views/), their API (api/) and
tables (tables/)."""
