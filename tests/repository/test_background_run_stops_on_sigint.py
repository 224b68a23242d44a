"""A pytest run started with SIGINT ignored, as a shell without job control starts its background commands (the
groups of ``scripts/test``), stops on SIGINT like on Ctrl-C: its fixtures are torn down and it prints what failed
and its summary (tests/support/interrupt.py). ``scripts/test`` interrupts its groups that way at its deadline.

The case runs an inner pytest session in its own process, with the plugin."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigint_stops_a_background_run_with_teardown_and_summary(tmp_path: Path) -> None:
    torn_down = tmp_path / "torn-down"
    started = tmp_path / "started"
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import pytest
        pytest_plugins = ["tests.support.interrupt"]
        @pytest.fixture(scope="session")
        def component():
            yield
            open({str(torn_down)!r}, "w").close()
        """))
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(f"""
        import time
        def test_fails():
            assert 1 == 2, "the failure the summary names"
        def test_waits(component):
            open({str(started)!r}, "w").close()
            time.sleep(120)
        """))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:timeout", "-q",
                             str(tmp_path), f"--rootdir={tmp_path}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=_ignore_sigint)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the inner run never reached its test"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out, out
    assert "AssertionError: the failure the summary names" in out, out
    assert "short test summary info" in out and "test_inner.py::test_fails" in out.partition("summary info")[2], out
    assert torn_down.exists(), f"the session fixture was not torn down:\n{out}"
