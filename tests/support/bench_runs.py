"""Runs a benchmark harness (bench/*.py) from a test, and stops all of it if the test ends first.

A harness starts bookies, ZooKeeper, JVMs and load generators. ``subprocess.run``'s timeout (and a test timeout
interrupting it) would SIGKILL the harness alone and leave all of those running, a load generator among them
spinning on a core for the rest of the run. Here the harness runs in its own process group: it first gets SIGTERM,
on which it stops what it started, and whatever of its group is still there after that is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

STOP_GRACE_S = 120


def run_bench(script: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python script args``: its exit code and output, within ``timeout`` seconds."""
    argv = [sys.executable, str(script), *args]
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
