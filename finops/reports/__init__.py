"""Tables of figures defined once (tables.py) and their renderings: page HTML, CSV (csv.py)."""
