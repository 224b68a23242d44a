"""Runs a benchmark harness (bench/*.py) from a test, and stops all of it if the test ends first; and imports one,
for the unit tests of its pure parts (``bench_module``).

A harness starts bookies, ZooKeeper, JVMs and load generators. ``subprocess.run``'s timeout (and a test timeout
interrupting it) would SIGKILL the harness alone and leave all of those running, a load generator among them
spinning on a core for the rest of the run. Here the harness runs in its own process group: it first gets SIGTERM,
on which it stops what it started, and whatever of its group is still there after that is killed.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

STOP_GRACE_S = 120
BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def bench_module(name: str) -> Iterator[ModuleType]:
    """A module fixture's body: ``yield from bench_module("run_all")`` gives bench/run_all.py as a module (the
    harnesses import each other by their bare names, so bench/ is on the path while it is in use)."""
    sys.path.insert(0, str(BENCH_DIR))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH_DIR))


def run_bench(script: Path, *args: str, timeout: float,
              wrapper: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """``python script args`` (after ``wrapper``'s words, a command that runs it): its exit code and output,
    within ``timeout`` seconds."""
    argv = [*wrapper, sys.executable, str(script), *args]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:  # the timeout, or the test interrupted (its own timeout included)
            _signal_group(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=STOP_GRACE_S)
            raise
        finally:
            _signal_group(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
