"""A process that a test starts and leaves running without an owner (its parent gone) is killed after the test's
teardown, and the test errors naming it (tests/support/leftovers.py); what a fixture starts during setup, for
the session, is not a leftover, nor are the helpers such a process starts later, nor a process the test process
itself still holds (a session cluster's member that a test restarted). A run stopped by SIGTERM tears its session
fixtures down, as on Ctrl-C, and so stops what they started.

Each case runs an inner pytest session in its own process, with the plugin, on a real child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from bookie_fleet import fork_server
from bookie_fleet.processes import free_port

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


def test_a_bookie_forked_for_a_harness_that_died_is_found_and_killed(tmp_path: Path) -> None:
    """A forked bookie's parent is its fork server, which leaves with its client: the bookie of a harness killed
    by a timeout is an orphan like a Popen'd one, and is named by the name its fork gave it."""
    pidfile, conf = tmp_path / "pid", tmp_path / "bookie.conf"
    conf.write_text(f"metadataServiceUri=zk+hierarchical://127.0.0.1:{free_port('127.0.0.1')}/ledgers\n"
                    f"bookiePort={free_port('127.0.0.1')}\nlisteningAddress=127.0.0.1\n"
                    f"journalDirectories={tmp_path}/journal\nledgerDirectories={tmp_path}/ledgers\n")
    harness = (f"import sys; from pathlib import Path; from bookie_fleet import fork_server; "
               f"bookie = fork_server.start([sys.executable, '-m', 'bookie.cli', 'serve', '--conf', '{conf}'], "
               f"Path('{tmp_path}/bookie.log')); print(bookie.pid, flush=True); sys.stdin.read()")
    result = _run_inner(tmp_path, f"""
        import os, subprocess, sys
        def test_starts_a_harness_that_is_killed():
            env = {{**os.environ, "{fork_server.ENABLE_ENV}": "1"}}
            harness = subprocess.Popen([sys.executable, "-c", {harness!r}], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, env=env)
            open("{pidfile}", "w").write(harness.stdout.readline().decode())
            harness.kill()
            harness.wait()
        """)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "1 passed, 1 error" in out and "(bookie serve)" in out and "orphaned (now killed)" in out, out
    assert _gone_or_zombie(int(pidfile.read_text())), "the forked bookie still runs"


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


def test_a_run_stopped_by_sigterm_stops_what_its_session_fixtures_started(tmp_path: Path) -> None:
    pidfile, started = tmp_path / "pid", tmp_path / "started"
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.leftovers"]\n')
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(f"""
        import subprocess, time
        import pytest

        @pytest.fixture(scope="session")
        def server():
            proc = subprocess.Popen(["sleep", "300"])  # a session's server: its teardown stops it
            open("{pidfile}", "w").write(str(proc.pid))
            yield proc
            proc.terminate()
            proc.wait()

        def test_runs_long(server):
            open("{started}", "w").write("")
            time.sleep(300)
        """))
    inner = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path),
                              f"--rootdir={tmp_path}"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline and inner.poll() is None, "the inner test did not start"
            time.sleep(0.1)
        inner.send_signal(signal.SIGTERM)
        out, _ = inner.communicate(timeout=60)
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait()
    assert inner.returncode != 0, out
    assert _gone_or_zombie(int(pidfile.read_text())), f"the session fixture's process still runs:\n{out}"
