"""The demo loaded twice, shared by the package's modules: tests/demo_story/test_demo.py (spend, caps, contracts,
alerts, the second load changing nothing) and tests/demo_story/test_unit_economics.py (latency, outcomes, evals).

Package-scoped: loading the demo twice is most of both modules' time, and they read the same organisation. The
test run's scheduler keeps this package on one pytest-xdist worker (tests/conftest.py, SHARED_FIXTURE_PACKAGES)."""

import pytest

from tests.demo_helpers import demo_loaded_twice, demo_totals


@pytest.fixture(scope="package")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo loaded twice (tests/demo_helpers.py), with the totals after each load."""
    with demo_loaded_twice(django_db_blocker, tmp_path_factory, demo_totals) as loaded:
        yield loaded


@pytest.fixture
def loaded(demo, db):
    return demo
