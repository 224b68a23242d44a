"""Bookies and operators started by tests fork from a process that imported them once (bookie_fleet/fork_server.py).

A bookie's interpreter spends about 1.1 s of CPU on its imports and the operator's about 2.4 s, and the suite
starts some 700 bookies and inspectors and 80 operators: on two cores that is several minutes of a run. Set for
the test process and so for every harness it starts; benchmarks and the playground started outside the test suite
start each process as a fresh interpreter, as production does. A value already in the environment wins (``0``
turns it off).
"""

from __future__ import annotations

import os

import pytest
from bookie_fleet.fork_server import ENABLE_ENV


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(ENABLE_ENV, "1")
