"""Holding a test module on the day it took as "today".

A module that reads the date once (at import, or in a module fixture) and compares it minutes later with what the
product computes sees two different days when the run crosses midnight UTC: the suite takes a quarter of an hour, and
CI's run of 2026-11-27 started at 23:48 and failed three such tests after 00:00. Holding the module's tests at noon
of its day (the clock still ticks) makes both readings the same day; noon is at most twelve hours from Postgres's
own clock, which these modules never compare with the Python one.
"""

import datetime as dt
from contextlib import contextmanager

import pytest
import time_machine


@contextmanager
def held_on(day: dt.date):
    with time_machine.travel(dt.datetime.combine(day, dt.time(12), dt.UTC), tick=True):
        yield


def holding(day: dt.date):
    """An autouse fixture holding each test of the module that assigns it on `day`."""

    @pytest.fixture(autouse=True)
    def held():
        with held_on(day):
            yield

    return held
