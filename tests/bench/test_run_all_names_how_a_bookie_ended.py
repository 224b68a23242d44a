"""When a benchmark point fails because a bookie is gone, the suite says how that bookie ended: the exit code
it returned, or the signal that killed it (a SIGKILL nobody of ours sent is the kernel's OOM killer)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("run_all")


def test_an_exit_code_is_named(bench: ModuleType) -> None:
    assert bench.exit_account(3) == "exited with 3"


def test_a_negative_code_is_the_signal_that_killed_it(bench: ModuleType) -> None:
    assert bench.exit_account(-signal.SIGKILL) == "was killed by SIGKILL"
    assert bench.exit_account(-signal.SIGSEGV) == "was killed by SIGSEGV"


def test_a_bookie_never_started_says_so(bench: ModuleType) -> None:
    assert bench.exit_account(None) == "was never started"
