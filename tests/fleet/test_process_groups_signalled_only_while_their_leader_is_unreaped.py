"""A process group is signalled through its leader's id only while that leader is not reaped (running, or a
zombie still holding the id). Once reaped, the id is free, and the kernel hands it out again when its ids come
round (32768 of them on many machines, every JVM thread taking one): a stop called long after a process exited
by itself (a bookie that failed and stopped, a killed tool) would signal whichever session holds the id by then,
a bookie of another test among them. Stopping a group still reaches what its leader left behind: the leader is
kept a zombie until the group has had its SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bookie_fleet.processes import BookieProcess
from localkube.procs import group_alive, signal_group, stop_process_group

# A leader that leaves a child in its group: the child ignores SIGTERM, the leader exits on it.
LEADER_WITH_CHILD = """
import signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(300)"],
    stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)


def test_a_reaped_leaders_group_is_never_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _sleeper()
    proc.kill()
    proc.wait()
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    signal_group(proc, signal.SIGKILL)
    stop_process_group(proc, 1)
    assert sent == []


def test_a_bookie_stopped_long_after_it_exited_signals_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    class Exited(BookieProcess):
        conf_name = "bookie.conf"
        ready_timeout = 1.0

        def __init__(self, proc: subprocess.Popen[bytes]) -> None:
            self.proc = proc

    bookie = Exited(_sleeper())
    assert bookie.proc is not None
    bookie.proc.kill()
    while bookie.running:  # the checks a harness makes reap it, as they did before this stop
        time.sleep(0.01)
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    bookie.stop()
    bookie.kill()
    assert sent == [] and bookie.proc is None


def test_stopping_a_group_reaches_what_its_leader_left_behind() -> None:
    leader = subprocess.Popen([sys.executable, "-c", LEADER_WITH_CHILD], stdout=subprocess.PIPE,
                              start_new_session=True)
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    try:
        stop_process_group(leader, 10)
        assert leader.returncode == -signal.SIGTERM
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the child that ignored SIGTERM outlived its group's stop"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        leader.stdout.close()


def test_a_leader_that_will_not_exit_is_killed_after_its_grace() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                             "signal.SIG_IGN); print('ready', flush=True); time.sleep(300)"],
                            stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    stop_process_group(proc, 0.5)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert not group_alive(proc.pid)
