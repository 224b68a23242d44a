"""Failpoints: off unless ``BOOKIE_FAILPOINTS`` names them, SIGKILL on the n-th hit, misspellings refused."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys

import pytest
from bookie import failpoints


def test_parse_names_and_counts() -> None:
    assert failpoints.parse("") == {}
    assert failpoints.parse("gc.compaction.after-commit, stream.cleaner.mid_write:3") == {
        "gc.compaction.after-commit": 1, "stream.cleaner.mid_write": 3}


@pytest.mark.parametrize(("spec", "says"), [
    ("gc.compaction.after-comit", "unknown failpoint 'gc.compaction.after-comit'"),
    ("stream.cleaner.mid_write:x", "must be an integer, not 'x'"),
    ("stream.cleaner.mid_write:0", "must be at least 1"),
])
def test_bad_settings_are_refused_naming_the_problem(spec: str, says: str) -> None:
    with pytest.raises(failpoints.FailpointError, match=says.replace(".", r"\.")):
        failpoints.parse(spec)


def _run_hits(times: int, spec: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != failpoints.ENV}
    if spec is not None:
        env[failpoints.ENV] = spec
    code = ("from bookie import failpoints\n"
            f"for i in range({times}):\n"
            "    failpoints.hit('stream.cleaner.mid_write')\n"
            "    print(i, flush=True)\n")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_off_unless_enabled() -> None:
    done = _run_hits(3, None)
    assert done.returncode == 0 and done.stdout.split() == ["0", "1", "2"]


def test_kills_the_process_at_the_nth_hit() -> None:
    done = _run_hits(3, "stream.cleaner.mid_write:2")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["0"], "killed when reaching it the second time"


def test_io_error_raises_once_at_the_nth_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(failpoints.ENV, "journal.fsync:2")
    monkeypatch.setattr(failpoints, "_armed", None)
    failpoints.io_error("journal.fsync")
    with pytest.raises(OSError, match="injected I/O error") as raised:
        failpoints.io_error("journal.fsync")
    assert raised.value.errno == errno.EIO
    failpoints.io_error("journal.fsync")  # reported once, as a failed fsync is: later passes succeed
