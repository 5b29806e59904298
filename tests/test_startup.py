"""A web process at start-up (finops/wsgi.py, finops/web/startup.py): what it has alive once started stays out of
the full garbage collections a request may set off (issue 23: those were the slowest requests of a page)."""

import gc
import importlib
import sys


def test_the_wsgi_module_freezes_what_start_up_left_alive():
    gc.unfreeze()
    sys.modules.pop("finops.wsgi", None)
    try:
        importlib.import_module("finops.wsgi")
        frozen = gc.get_freeze_count()
        garbage_after = gc.collect()  # a full collection now walks none of them
    finally:
        gc.unfreeze()
        sys.modules.pop("finops.wsgi", None)
    assert frozen > 10_000, frozen  # Django, the views and their libraries: ~180k objects in a web process
    assert garbage_after == 0
