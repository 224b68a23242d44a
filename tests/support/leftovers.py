"""Nothing a test starts outlives it: a process started while a test ran and still running once its teardown is
over is killed, and the test errors at teardown naming it.

A left process is more than untidy on a two-core machine: one that spins takes a core from every test after it,
so a whole run slows down and long tests start to hit their timeouts far from the leak. Processes are recognised
by a marker in their environment, which this plugin sets in the test process and every child inherits (orphans
included, which a parent-child walk would miss). Processes of session- and module-scoped fixtures are started
during a test's setup, so only those started during its call or teardown count, and not those whose parent
ran before the call either: a session's process may start helpers while tests use it (Spark's JVM starts its
Python workers on demand, and reuses them). Containers of the local Kubernetes get a fresh environment: the
local control plane's own teardown answers for them.
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
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = Path(entry.path, "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            started = _start_ticks(int(entry.name))
            if started is not None:
                found[int(entry.name)] = started
    return found


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _describe(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        cmdline = "?"
    return f"pid {pid}: {cmdline[:200]}"


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
                                 f"teardown (now killed):\n  " + "\n  ".join(described))
        return result

    def _started_during_call(self) -> set[int]:
        """New processes, except the descendants of a process (other than this one) that ran before the call."""
        now = _marked(self.token)
        new = {pid for pid, started in now.items() if self.before_call.get(pid) != started}
        older = {pid for pid, started in now.items() if self.before_call.get(pid) == started}
        return {pid for pid in new if not self._descends_from(pid, older)}

    @staticmethod
    def _descends_from(pid: int, ancestors: set[int]) -> bool:
        me = os.getpid()
        parent = _parent(pid)
        for _ in range(64):
            if parent is None or parent in (0, 1, me):
                return False
            if parent in ancestors:
                return True
            parent = _parent(parent)
        return False


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Leftovers(), "bookie_fleet_leftovers")
