"""A bookie started through the fork server (bookie_fleet/fork_server.py) is the process ``python -m bookie.cli``
started with ``subprocess.Popen`` would be: the caller's environment and working directory, its own session, its
output appended to its log, its exit code or signal as ``Popen`` reports them. It stays a zombie, its pid and
group id its own, until its handle takes the code; its group is stopped as any bookie's. The operator starts from
a server of its own, and a start with other values of the variables a server's imports read from another server.
What no server can run as a fresh interpreter would (another program, a preloaded library) starts as one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie import termination
from bookie_fleet import fork_server
from bookie_fleet.cli import main as fleet_main
from bookie_fleet.fork_server import ForkedProcess, ForkServer
from bookie_fleet.local_bookies import LocalBookie, free_port
from localkube.procs import stop_process_group, wait_unreaped


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    server = ForkServer("bookie.cli", dict(os.environ))
    yield server
    server.close()


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_a_start_runs_with_the_callers_environment_and_working_directory(server: ForkServer,
                                                                         tmp_path: Path) -> None:
    env = {**os.environ, termination.IMPLEMENTATION_ENV: "apache-bookkeeper", termination.ENV_VAR: "termination"}
    proc = server.start(["serve", "--conf", "absent.conf"], env, tmp_path, tmp_path / "bookie.log")
    assert proc.wait(30) == 1
    assert "bookie cannot start (WrongImage)" in (tmp_path / "bookie.log").read_text()
    # The termination log, a path relative to the working directory the caller gave.
    assert (tmp_path / "termination").read_text().startswith(termination.WRONG_IMAGE)


def test_an_exit_code_is_kept_unreaped_until_the_handle_takes_it(server: ForkServer, tmp_path: Path) -> None:
    log = tmp_path / "bookie.log"
    proc = server.start(["serve", "--conf", str(tmp_path / "absent.conf")], dict(os.environ), tmp_path, log)
    assert wait_unreaped(proc, 30)
    assert _state(proc.pid) == "Z" and proc.returncode is None  # its id, and its group's, still its own
    assert proc.poll() == 2  # argparse's code for a configuration it cannot read
    deadline = time.monotonic() + 10
    while _state(proc.pid) is not None and time.monotonic() < deadline:  # the server reaps on the handle's word
        time.sleep(0.02)
    assert _state(proc.pid) is None
    assert "cannot read configuration file" in log.read_text()
    assert server.start(["--help"], dict(os.environ), tmp_path, log).wait(30) == 0
    assert "bookie serve --conf bookie.conf" in log.read_text()


def test_a_started_bookie_leads_its_own_session_and_stops_with_its_group(tmp_path: Path) -> None:
    unreachable_zookeeper = f"127.0.0.1:{free_port('127.0.0.1')}"
    bookie = LocalBookie(address="127.0.0.1", port=free_port("127.0.0.1"), http_port=free_port("127.0.0.1"),
                         data_dir=tmp_path / "bookie", zk_connect=unreachable_zookeeper, ledgers_root="/ledgers")
    bookie.start(wait=False)
    try:
        assert isinstance(bookie.proc, ForkedProcess)
        pid = bookie.proc.pid
        assert os.getsid(pid) == pid and os.getpgid(pid) == pid
        assert bookie.running
        bookie.kill()  # SIGKILL to the group, as a crash: reaped, its code -9
        assert _state(pid) is None
    finally:
        bookie.stop()


def test_a_signal_ends_it_as_popen_reports_one(server: ForkServer, tmp_path: Path) -> None:
    conf = tmp_path / "bookie.conf"
    port = free_port("127.0.0.1")
    conf.write_text(f"metadataServiceUri=zk+hierarchical://127.0.0.1:{free_port('127.0.0.1')}/ledgers\n"
                    f"bookiePort={port}\nlisteningAddress=127.0.0.1\nadvertisedAddress=127.0.0.1\n"
                    f"journalDirectories={tmp_path}/journal\nledgerDirectories={tmp_path}/ledgers\n")
    proc = server.start(["serve", "--conf", str(conf)], dict(os.environ), tmp_path, tmp_path / "bookie.log")
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.5)  # it waits for its ZooKeeper
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    stop_process_group(proc, 1)  # a stop after the exit signals nobody and returns


def test_what_the_server_cannot_run_as_a_fresh_interpreter_starts_as_one(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fork_server.ENABLE_ENV, "1")
    assert fork_server.start(["java", "-version"], tmp_path / "log") is None
    assert fork_server.start([sys.executable, "-m", "bookie_fleet.cli"], tmp_path / "log") is None
    forked = fork_server.start([sys.executable, "-m", "bookie.cli", "--help"], tmp_path / "log")
    assert isinstance(forked, ForkedProcess) and forked.wait(30) == 0
    # Other import-time variables than this process's server started with: a preloaded library, say.
    monkeypatch.setenv("LD_PRELOAD", f"{os.environ.get('LD_PRELOAD', '')} libfault.so".strip())
    assert fork_server.start([sys.executable, "-m", "bookie.cli", "--help"], tmp_path / "log") is None
    monkeypatch.setenv(fork_server.ENABLE_ENV, "0")
    monkeypatch.delenv("LD_PRELOAD")
    assert fork_server.start([sys.executable, "-m", "bookie.cli", "--help"], tmp_path / "log") is None


def test_a_variable_read_while_the_server_imported_with_another_value_takes_another_server(
        server: ForkServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert server.runs(dict(os.environ))
    assert server.read_at_import is not None and "AIOHTTP_NO_EXTENSIONS" in server.read_at_import  # aiohttp's
    assert not server.runs({**os.environ, "AIOHTTP_NO_EXTENSIONS": "1"})
    assert not server.runs({**os.environ, "PYTHONMALLOC": "malloc"})  # read by the interpreter itself
    monkeypatch.setenv(fork_server.ENABLE_ENV, "1")
    command = [sys.executable, "-m", "bookie.cli", "--help"]
    usual = fork_server.start(command, tmp_path / "log")
    other = fork_server.start(command, tmp_path / "log", env={**os.environ, "AIOHTTP_NO_EXTENSIONS": "1"})
    assert isinstance(usual, ForkedProcess) and isinstance(other, ForkedProcess)
    assert other.server is not usual.server and other.server.env["AIOHTTP_NO_EXTENSIONS"] == "1"
    assert usual.wait(30) == 0 and other.wait(30) == 0


def test_the_operators_own_variables_are_read_by_each_child() -> None:
    """Its __main__ sets them from its flags, then imports what reads them: those modules cannot be preloaded."""
    operator_server = ForkServer("bookie_operator", dict(os.environ))
    try:
        assert operator_server.runs(dict(os.environ))
        assert operator_server.read_at_import is not None
        assert not {name for name in operator_server.read_at_import if name.startswith("BOOKIE_OPERATOR")}
    finally:
        operator_server.close()


def test_the_fleet_command_called_in_a_test_process_leaves_forking_on(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the playground starts fresh interpreters; ``bookie-fleet cluster`` and ``cache``, which tests call in
    their own process, leave this process's setting alone (else every later start of the session would be a
    fresh interpreter, silently)."""
    monkeypatch.setenv(fork_server.ENABLE_ENV, "1")
    monkeypatch.setenv("BOOKIE_FLEET_CACHE", str(tmp_path))
    assert fleet_main(["cache"]) == 0
    assert fork_server.enabled()


def test_the_operator_starts_from_a_server_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fork_server.ENABLE_ENV, "1")
    log = tmp_path / "operator.log"
    operator = fork_server.start([sys.executable, "-m", "bookie_operator", "--help"], log)
    bookie = fork_server.start([sys.executable, "-m", "bookie.cli", "--help"], log)
    assert isinstance(operator, ForkedProcess) and isinstance(bookie, ForkedProcess)
    assert operator.server is not bookie.server and operator.server.module == "bookie_operator"
    assert operator.wait(60) == 0 and bookie.wait(60) == 0
    assert "usage: bookie-operator" in log.read_text()


def test_the_server_exits_with_its_client() -> None:
    client = subprocess.run([sys.executable, "-c", "import os; from bookie_fleet.fork_server import ForkServer\n"
                             "print(ForkServer('bookie.cli', dict(os.environ)).proc.pid)"],
                            capture_output=True, text=True, timeout=60, check=True)
    server_pid = int(client.stdout)
    deadline = time.monotonic() + 20
    while _state(server_pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(server_pid) in (None, "Z"), f"the fork server {server_pid} outlived its client"
