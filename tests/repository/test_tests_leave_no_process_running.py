"""A process that a test starts and leaves running without an owner (its parent gone) is killed after the test's
teardown, and the test errors naming it (tests/support/leftovers.py); what a fixture starts during setup, for
the session, is not a leftover, nor are the helpers such a process starts later, nor a process the test process
itself still holds (a session cluster's member that a test restarted).

Each case runs an inner pytest session in its own process, with the plugin, on a real child process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run_inner(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.leftovers"]\n')
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path),
                           f"--rootdir={tmp_path}"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_an_orphan_left_by_a_test_is_killed_and_fails_its_test(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    result = _run_inner(tmp_path, f"""
        import subprocess
        def test_leaves_an_orphan():
            # A harness that starts a sleeper in its own session and exits: nothing will stop the sleeper.
            subprocess.run(["sh", "-c", "setsid sleep 300 > /dev/null 2>&1 & echo $! > {pidfile}"], check=True)
        """)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "1 passed, 1 error" in out and "sleep 300" in out and "orphaned (now killed)" in out, out
    pid = int(pidfile.read_text())
    assert _gone_or_zombie(pid), "the left process still runs"


def _gone_or_zombie(pid: int) -> bool:
    """Killed: gone, or a zombie its new parent (init, once the inner session exited) has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_session_fixtures_process_its_helpers_and_a_stopped_process_are_not_leftovers(tmp_path: Path) -> None:
    result = _run_inner(tmp_path, """
        import os
        import subprocess
        import sys
        import time

        import pytest

        # A session server that starts a helper of its own when asked (as Spark's JVM starts Python workers).
        SERVER = "import subprocess, sys; sys.stdin.readline(); subprocess.Popen(['sleep', '300']); sys.stdin.read()"

        @pytest.fixture(scope="session")
        def server():
            proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, start_new_session=True)
            yield proc
            os.killpg(proc.pid, 9)
            proc.wait()

        def test_uses_the_session_server(server):
            server.stdin.write(b"start a helper\\n")
            server.stdin.flush()
            time.sleep(1)
            assert server.poll() is None

        @pytest.fixture(scope="session")
        def members():
            held = []
            yield held
            for proc in held:
                proc.kill()
                proc.wait()

        def test_stops_what_it_starts(server):
            proc = subprocess.Popen(["sleep", "300"])
            proc.terminate()
            proc.wait()

        def test_restarts_a_member_the_session_holds(members):
            members.append(subprocess.Popen(["sleep", "300"]))
        """)
    assert result.returncode == 0, result.stdout + result.stderr
