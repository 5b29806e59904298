"""Tables of figures defined once (tables.py) and their renderings: page HTML, CSV (csv.py).

And the monthly TCO report as a domain package (issue 27): models.py, selectors/, services/, views/. The renderers
beside them never touch the ORM (the layers contract in pyproject.toml lists them)."""
