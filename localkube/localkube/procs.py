"""Child processes in their own process groups: start detached, check, stop the whole group."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class ChildProcess(Protocol):
    """What the functions below use of a started process: ``subprocess.Popen``, or a handle that answers as it
    does for a process another one forked (``bookie_fleet.fork_server.ForkedProcess``)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | Any: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


@runtime_checkable
class WaitsUnreaped(Protocol):
    """A handle whose process is not this one's child, so ``os.waitid`` cannot look at it: it waits itself."""

    def wait_unreaped(self, timeout: float) -> bool: ...


def start_detached(argv: list[str], log: Path, *, cwd: Path | None = None,
                   env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session (its pid is its process group id), output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd, env=env, start_new_session=True)
    return proc


def reap(pid: int) -> None:
    """Collect ``pid`` if it is our exited child (no zombie left behind)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def describe(pid: int) -> str:
    """What /proc says about ``pid`` (for error messages)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text()[:80] + " | " + Path(f"/proc/{pid}/cmdline").read_bytes()[
            :120].replace(b"\0", b" ").decode(errors="replace")
    except OSError as exc:
        return f"no process {pid} ({exc.strerror})"


def alive(pid: int, expect: str | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, if ``expect`` is given, its command line contains it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    if expect is None:
        return True
    try:
        return expect.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) succeeds for zombies too: look for a live member.
    return any(group == pgid and state != "Z" for _, state, group in _processes())


def group_members(pgid: int) -> list[int]:
    """The pids of process group ``pgid``, zombies included."""
    return [pid for pid, _, group in _processes() if group == pgid]


def _processes() -> Iterator[tuple[int, str, int]]:
    """``(pid, state, pgid)`` of every process /proc lists (those gone while it is read are skipped)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # After the last ")": the command name may itself hold spaces and parentheses.
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        yield int(entry.name), fields[0], int(fields[2])


def signal_group(proc: ChildProcess, sig: int) -> None:
    """Send ``sig`` to the process group ``proc`` leads, as long as ``proc`` has not been reaped (running, or a
    zombie still holding its id). Once reaped, its id is free and the kernel hands it out again when its ids come
    round (``kernel.pid_max`` is 32768 on many machines, and every thread of a JVM takes one): another session's
    leader may hold it by now, so nothing is sent. A group already gone is no error."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)


def wait_unreaped(proc: ChildProcess, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``proc`` to exit without reaping it, so that its group can still be
    signalled safely; whether it exited."""
    if isinstance(proc, WaitsUnreaped):
        return proc.wait_unreaped(timeout)
    deadline = time.monotonic() + timeout
    while proc.returncode is None:
        try:
            exited = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped by someone else: Popen learns its code on the next poll
            proc.poll()
            return True
        if exited is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def stop_process_group(proc: ChildProcess, timeout: float) -> None:
    """SIGTERM ``proc``'s group, give its leader ``timeout`` seconds to exit, SIGKILL whatever is left of the group
    (the leader unreaped meanwhile, so the group id is still its own), then reap the leader."""
    signal_group(proc, signal.SIGTERM)
    wait_unreaped(proc, timeout)
    signal_group(proc, signal.SIGKILL)
    proc.wait()


def stop_group(pgid: int, grace: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Signal the process group, wait up to ``grace`` seconds, then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap(pgid)
        if not group_alive(pgid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and group_alive(pgid):
        reap(pgid)
        time.sleep(0.05)
    reap(pgid)


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


# Ports picked when the preferred one is taken: below the kernel's ephemeral range (ip_local_port_range, 32768 and
# up by default), where every socket bound to port 0 gets its port. A port picked there could be taken between the
# pick and the server's own bind by any such socket, a wildcard listener of a JVM (Spark, Pulsar) or an outgoing
# connection's source port included; below it, only another caller of this function picking the same one at
# random could.
PICKED_PORTS_FROM = 10000
PICK_ATTEMPTS = 100
_random = random.SystemRandom()  # never the tests' seeded generator: processes seeded alike would pick alike


def ephemeral_ports_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def pick_port(preferred: int = 0, host: str = "127.0.0.1", avoid: set[int] | None = None) -> int:
    """``preferred`` if it is free (and not in ``avoid``), else a free one picked at random from
    ``PICKED_PORTS_FROM`` up to the kernel's ephemeral range."""
    avoid = avoid or set()
    if preferred and preferred not in avoid and port_free(preferred, host):
        return preferred
    below = max(PICKED_PORTS_FROM + 1, ephemeral_ports_start())
    for _ in range(PICK_ATTEMPTS):
        candidate = _random.randrange(PICKED_PORTS_FROM, below)
        if candidate not in avoid and port_free(candidate, host):
            return candidate
    raise RuntimeError(f"no free port on {host} among {PICK_ATTEMPTS} picked from {PICKED_PORTS_FROM} to {below}")
