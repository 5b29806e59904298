"""The web process once started (finops/wsgi.py): every page's code loaded, then what lives as long as the process
moved out of the garbage collector's way.

Python's full (generation 2) collection walks every object still alive: after start-up ~180–230k of them (Django,
the URLconf's views and what they import: pandas, numpy, Plotly's layout). The overview's requests set one off
about once in 20–40 requests, and it cost 84 ms of CPU in that request (issue 23, on a loaded 2-core machine: a
page's p95 of 20 requests is its second-slowest, and one or two collections moved it by 10–20 ms between runs).
`gc.freeze()` moves the objects alive after start-up into a generation no collection visits: they are the modules,
classes and functions, never garbage. The full collections that remain walk what came after (the first requests'
template and URL caches, ~45k objects: 26–31 ms in the same conditions); requests' own objects are collected as
before.
"""

import gc

from django.urls import get_resolver


def settle() -> int:
    """Load every view module (the URLconf, which Django otherwise loads at the first request), collect what
    start-up left, and freeze the rest. How many objects were frozen (0 when there was nothing to freeze)."""
    get_resolver().url_patterns  # noqa: B018 — importing the URLconf imports every view and its libraries
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
