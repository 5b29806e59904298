"""Unit economics and performance (issue 12): mergeable latency distributions, what is measured of a group of
requests, and latency as teams report it."""
