"""A pytest run started in the background still stops cleanly when interrupted.

A shell without job control starts its background commands with SIGINT ignored, and Python then leaves it
ignored: ``scripts/test``'s groups are such commands, and its deadline's SIGINT did nothing. With Python's own
handler back, SIGINT is Ctrl-C: pytest tears down the session's components and prints what failed and its
summary."""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
