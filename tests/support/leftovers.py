"""Nothing a test starts is left running without an owner: a process started while a test ran, still running
once its teardown is over, and orphaned (its parent gone, so nothing will ever stop it) is killed, and the test
errors at teardown naming it.

An orphan is more than untidy on a two-core machine: one that spins takes a core from every test after it, so a
whole run slows down and long tests start to hit their timeouts far from the leak. The typical one is a
harness killed by a timeout whose bookies, JVMs and load generators live on. Processes are recognised by a
marker in their environment, which this plugin sets in the test process and every child inherits (orphans
included, which a parent-child walk from here would miss). A process whose parent is still this test process,
or a process that ran before the test (a session fixture's server starting helpers, as Spark's JVM starts its
Python workers), has an owner: a test may restart a member of a session's cluster, which that cluster stops.
Containers of the local Kubernetes get a fresh environment: the local control plane's own teardown answers for
them.

A test run told to stop with SIGTERM (a CI job's time limit, ./scripts/test's exit trap) stops as on Ctrl-C: the
running test is interrupted and every fixture's teardown runs, session ones included, so its local control plane,
ZooKeeper and bookies stop with it. Python's default for SIGTERM would end the process at once and leave them all
running, orphaned.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Generator
from pathlib import Path

import pytest

MARKER = "BOOKIE_FLEET_TEST_RUN"
GRACE_S = 10.0  # a process told to stop during teardown may still be exiting
EXEC_RETRIES, EXEC_PAUSE_S = 5, 0.02  # looks again at a process caught in an exec, with no environment yet
JUST_STARTED_S = 5.0  # only a process this young can be in its first exec


def _start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), or None if it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _marked(token: str) -> dict[int, int]:
    """Every live process carrying ``token`` in its environment: pid -> start time."""
    needle = f"{MARKER}={token}".encode()
    found: dict[int, int] = {}
    me = os.getpid()
    in_exec: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        environ = _environ(int(entry.name))
        if environ == b"" and _just_started(int(entry.name)):
            in_exec.append(int(entry.name))
        elif environ is not None and needle in environ.split(b"\0"):
            _note_started(found, int(entry.name))
    # A process in the middle of an exec shows an empty environment for a moment (its new memory has no
    # environment yet): a harness's last child, started as the test returned, is often caught there.
    for _ in range(EXEC_RETRIES):
        if not in_exec:
            break
        time.sleep(EXEC_PAUSE_S)
        pending, in_exec = in_exec, []
        for pid in pending:
            environ = _environ(pid)
            if environ == b"":
                in_exec.append(pid)
            elif environ is not None and needle in environ.split(b"\0"):
                _note_started(found, pid)
    return found


def _just_started(pid: int) -> bool:
    """A live process started in the last few seconds, not a kernel thread (kthreadd's children, which have no
    environment at all)."""
    started = _start_ticks(pid)
    if started is None or _parent(pid) in (None, 0, 2):
        return False
    uptime_ticks = float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK")
    return uptime_ticks - started < JUST_STARTED_S * os.sysconf("SC_CLK_TCK")


def _environ(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None


def _note_started(found: dict[int, int], pid: int) -> None:
    started = _start_ticks(pid)
    if started is not None:
        found[pid] = started


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _descends_from(pid: int, owners: set[int]) -> bool:
    parent = _parent(pid)
    for _ in range(64):  # a bound: a chain is short, and pids could be reused while walking it
        if parent is None or parent <= 1:
            return False
        if parent in owners:
            return True
        parent = _parent(parent)
    return False


def _describe(pid: int) -> str:
    """Its name and command line: a bookie forked from its fork server has the server's command line, and the
    name of its own (``bookie serve``)."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        name, cmdline = "?", "?"
    return f"pid {pid} ({name}): {cmdline[:200]}"


def _stop(pids: list[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_start_ticks(pid) is not None for pid in pids):
            time.sleep(0.1)


class _Leftovers:
    def __init__(self) -> None:
        self.token = uuid.uuid4().hex
        os.environ[MARKER] = self.token
        self.before_call: dict[int, int] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            return (yield)
        finally:  # after the fixtures' setup, failed or not: what they started is theirs
            self.before_call = _marked(self.token)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        result = yield
        left = self._started_during_call()
        deadline = time.monotonic() + GRACE_S
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = self._started_during_call()
        if left:
            described = [_describe(pid) for pid in sorted(left)]
            _stop(sorted(left))
            raise AssertionError(f"{len(described)} process(es) started by this test still ran after its "
                                 f"teardown, orphaned (now killed):\n  " + "\n  ".join(described))
        return result

    def _started_during_call(self) -> set[int]:
        """Processes started since the call began that have no owner: neither this process nor one that ran
        before the call is among their ancestors."""
        now = _marked(self.token)
        owners = {pid for pid, started in now.items() if self.before_call.get(pid) == started} | {os.getpid()}
        return {pid for pid, started in now.items() if self.before_call.get(pid) != started
                and not _descends_from(pid, owners)}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Leftovers(), "bookie_fleet_leftovers")
    signal.signal(signal.SIGTERM, _interrupt)
