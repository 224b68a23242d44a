"""When a benchmark point fails because a bookie is gone, the suite says how that bookie ended: the exit code
it returned, or the signal that killed it (a SIGKILL nobody of ours sent is the kernel's OOM killer). A bookie
still running but out of the writable set is said to be registered read-only, with how full its ledger disk is
(a full disk is what makes a bookie read-only in a benchmark run), or not registered at all."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

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


def test_a_bookie_out_of_the_writable_set_is_accounted_for_by_its_process_and_registration(
        bench: ModuleType, tmp_path: Path) -> None:
    from bookie_fleet.processes import spawn

    bookie = SimpleNamespace(bookie_id="127.0.0.9:3181", log_path=tmp_path / "bookie.log", proc=None, running=False,
                             ledger_dir=tmp_path)
    bookie.proc = spawn([sys.executable, "-c", "print('last words', flush=True); import time; time.sleep(60)"],
                        bookie.log_path)
    try:
        deadline = time.monotonic() + 30
        while "last words" not in bookie.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        bookie.running = True
        read_only = bench.missing_bookie_account(bookie, read_only=True)
        assert read_only.startswith("bookie 127.0.0.9:3181 is running, registered read-only (its ledger disk "), \
            read_only
        assert "at which a bookie goes read-only)" in read_only
        assert "is running, not registered at all" in bench.missing_bookie_account(bookie, read_only=False)
    finally:
        bookie.proc.kill()
        bookie.proc.wait()
    bookie.running = False
    told = bench.missing_bookie_account(bookie, read_only=False)
    assert "was killed by SIGKILL" in told and told.endswith("last words")
