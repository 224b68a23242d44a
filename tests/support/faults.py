"""Faults put on real processes, for the scenarios of tests/faults/ (docs/reliability.md).

Disks: ``small_disk_over(dir, size_mb)``: a size-limited tmpfs (a real file system that answers ENOSPC)
mounted over a stopped bookie's directory, with the directory's files copied in first, so a bookie of either
implementation restarts on it with its cookie and data; on exit the files are copied back and the mount
removed, whatever happened. ``fill(dir, leave)`` fills it up to ``leave`` free bytes, ``free(filler)``
gives the space back. ``flip_bit(file, offset, bit)``: damage at rest.

Failing devices: ``start_under_libfiu(bookie, control)`` starts a stopped bookie (either implementation) with
libfiu's POSIX wrappers preloaded (Debian's ``fiu-run -x``, scripts/bootstrap.d/fiu.sh), nothing failing yet;
``fail_calls(bookie, control, ["pwrite", "fdatasync"])`` then makes those libc calls of that process fail with
EIO from that moment (``fiu-ctrl``). libfiu's failure points are per libc function and per process, not per
file: a failing ``fdatasync`` fails it for the journal and the ledger directories alike, and a failing
``write`` would fail the process's sockets and logs too, which is why only calls a bookie makes on its disks
are offered (``FAILABLE_CALLS``).

ZooKeeper sessions: ``SessionExpiry(zk_connect, ledgers_root)`` expires the session a running bookie (either
implementation) registered itself with, for real, on ZooKeeper's side (``expire``), and waits for the bookie to
register again (``wait_registered``); ``expire_session`` does it for any session id.

A fault that cannot be set up here (no permission to mount, say) raises ``FaultSetupError`` naming what was
tried and why it failed: scenarios fail with it, they never skip.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient


class FaultSetupError(RuntimeError):
    """The fault could not be put in place on this machine; the message says which and why."""


def _run(what: str, command: list[str], *, quiet: bool = False) -> None:
    """``quiet``: the tool says nothing when it succeeds, so any output is its error (fiu-ctrl exits 0 whatever
    happened: an unknown process, a command its target refused)."""
    try:
        done = subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise FaultSetupError(f"{what}: {command[0]} is not installed ({exc})") from None
    except subprocess.CalledProcessError as exc:
        raise FaultSetupError(f"{what}: `{' '.join(command)}` failed ({exc.returncode}): "
                              f"{exc.stderr.strip() or exc.stdout.strip()}") from None
    said = (done.stdout + done.stderr).strip()
    if quiet and said:
        raise FaultSetupError(f"{what}: `{' '.join(command)}` said: {said}")


@contextlib.contextmanager
def small_disk_over(directory: Path, size_mb: int) -> Iterator[Path]:
    """Mount a ``size_mb`` tmpfs over ``directory`` (its process stopped), keeping the directory's files."""
    if size_mb < 1:
        raise ValueError(f"a small disk needs at least 1 MiB, not {size_mb}")
    directory.mkdir(parents=True, exist_ok=True)
    aside = directory.with_name(f"{directory.name}.before-small-disk")
    shutil.copytree(directory, aside, symlinks=True)
    _run(f"mounting a {size_mb} MiB tmpfs over {directory}",
         ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(directory)])
    try:
        shutil.copytree(aside, directory, symlinks=True, dirs_exist_ok=True)
        yield directory
    finally:
        # What the process wrote on the small disk goes back to the real directory, for the checks after.
        kept = directory.with_name(f"{directory.name}.on-small-disk")
        with contextlib.suppress(OSError):
            shutil.copytree(directory, kept, symlinks=True)
        subprocess.run(["umount", "-l", str(directory)], check=False, capture_output=True)
        if kept.exists():
            shutil.rmtree(directory, ignore_errors=True)
            kept.rename(directory)
        shutil.rmtree(aside, ignore_errors=True)


def fill(directory: Path, leave: int) -> Path:
    """Fill the file system of ``directory`` until ``leave`` bytes stay free; returns the filler file."""
    filler = directory / f"filler-{uuid.uuid4().hex[:8]}"
    free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
    size = max(0, free - leave)
    with open(filler, "wb") as f:
        chunk = bytes(1 << 20)
        while size > 0:
            try:
                size -= f.write(chunk[:min(size, len(chunk))])
            except OSError:
                break  # the process on this disk took the last bytes meanwhile: full is what we want
    return filler


def free(filler: Path) -> None:
    filler.unlink(missing_ok=True)


def free_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def flip_bit(path: Path, offset: int, bit: int) -> bytes:
    """Flip one bit of ``path`` at byte ``offset`` (bit 0 to 7); returns the byte before the flip."""
    if not 0 <= bit < 8:
        raise ValueError(f"a byte has bits 0 to 7, not {bit}")
    size = path.stat().st_size
    if not 0 <= offset < size:
        raise ValueError(f"offset {offset} is outside {path} ({size} bytes)")
    with open(path, "r+b") as f:
        f.seek(offset)
        before = f.read(1)
        f.seek(offset)
        f.write(bytes([before[0] ^ (1 << bit)]))
        f.flush()
        os.fsync(f.fileno())
    return before


# ------------------------------------------------------------------ ZooKeeper session expiry
#
# How a session is expired, and why this way: the standard technique, a second connection that presents the
# victim's session id and password and then closes the session. ZooKeeper itself then expires it: it deletes
# the session's ephemeral znodes (a bookie's registration) and answers the victim's next reconnection with
# "session expired", exactly as after a timeout; the victim has to start a new session and register again.
# It needs nothing from the victim process, so it works the same on our bookie and on Apache BookKeeper's:
# - the session id is the ``ephemeralOwner`` of the bookie's registration znode (the session whose expiry
#   matters), read from ZooKeeper;
# - the password is not secret from ZooKeeper's side: the server derives it from the session id
#   (``ZooKeeperServer.generatePasswd``: ``java.util.Random(sessionId ^ 0xB3415C00)``, 16 bytes, unchanged
#   from 3.4 to 3.9) and checks a reconnection against that. A server that derived it otherwise would refuse
#   the second connection, and ``expire_session`` says so (``FaultSetupError``) rather than pretend.
# The other ways were worse for this: exposing the password from the bookie (its admin API, a log line) covers
# our bookie only; cutting the process off ZooKeeper for longer than its session timeout needs a per-socket
# firewall or network namespace (root, and the bookie's client connections must stay up while only its
# ZooKeeper traffic is cut), takes a whole session timeout each time, and lands at an imprecise moment;
# pausing the process (SIGSTOP) also stops it serving the writes the scenario is about.

_ZK_PASSWORD_SECRET = 0xB3415C00  # ZooKeeperServer.superSecret
_JAVA_RANDOM_MULTIPLIER = 0x5DEECE66D
_48_BITS = (1 << 48) - 1


def zookeeper_session_password(session_id: int) -> bytes:
    """The password ZooKeeper gave session ``session_id`` (``ZooKeeperServer.generatePasswd``): java.util.Random
    seeded with the id xor the server's constant, ``nextBytes`` of 16."""
    seed = ((session_id ^ _ZK_PASSWORD_SECRET) ^ _JAVA_RANDOM_MULTIPLIER) & _48_BITS
    password = b""
    while len(password) < 16:
        seed = (seed * _JAVA_RANDOM_MULTIPLIER + 0xB) & _48_BITS
        password += (seed >> 16).to_bytes(4, "little")[:16 - len(password)]  # next(32), low byte first
    return password


def expire_session(zk_connect: str, session_id: int, *, attempts: int = 5, timeout: float = 10.0) -> None:
    """Expire the live ZooKeeper session ``session_id``: take it over with its id and password, close it.

    Confirmed on ZooKeeper's side: a last takeover attempt must be refused as expired. The victim can win its
    session back between the takeover and the close (it reconnects at once); then it is taken over again.
    """
    password = zookeeper_session_password(session_id)
    for attempt in range(attempts):
        twin = KazooClient(hosts=zk_connect, client_id=(session_id, password), timeout=timeout)
        try:
            twin.start(timeout=timeout)
            taken = twin.client_id is not None and twin.client_id[0] == session_id
        finally:
            twin.stop()  # when it holds the victim's session, this is the close that expires it
            twin.close()
        if not taken:
            if attempt == 0:
                raise FaultSetupError(f"expiring ZooKeeper session 0x{session_id:x} at {zk_connect}: the server "
                                      "refused its id and derived password (the session was not alive, or this "
                                      "ZooKeeper derives passwords otherwise than generatePasswd)")
            return  # refused as expired: the previous close ended it
    raise FaultSetupError(f"expiring ZooKeeper session 0x{session_id:x} at {zk_connect}: still alive after "
                          f"{attempts} takeovers and closes")


class SessionExpiry:
    """Expires bookies' ZooKeeper sessions on one cluster; an observer connection of its own reads who holds
    each registration. ``with SessionExpiry(zk, root) as zk_faults: old = zk_faults.expire(bookie_id)`` then
    ``zk_faults.wait_registered(bookie_id, old)``. Blocking calls: from async code, ``asyncio.to_thread``."""

    def __init__(self, zk_connect: str, ledgers_root: str) -> None:
        self.zk_connect = zk_connect
        self.ledgers_root = ledgers_root.rstrip("/")
        self._zk = KazooClient(hosts=zk_connect, timeout=10.0)

    def __enter__(self) -> SessionExpiry:
        self._zk.start(timeout=30)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._zk.stop()
        self._zk.close()

    def registration(self, bookie_id: str) -> tuple[str, int] | None:
        """``(path, session id)`` of the bookie's registration, writable or read-only; None when it has none."""
        for path in (f"{self.ledgers_root}/available/{bookie_id}",
                     f"{self.ledgers_root}/available/readonly/{bookie_id}"):
            stat = self._zk.exists(path)
            if stat is not None and stat.ephemeralOwner:
                return path, int(stat.ephemeralOwner)
        return None

    def expire(self, bookie_id: str) -> int:
        """Expire the session holding the bookie's registration; returns that session's id."""
        found = self.registration(bookie_id)
        if found is None:
            raise FaultSetupError(f"expiring {bookie_id}'s ZooKeeper session: it is not registered under "
                                  f"{self.ledgers_root}/available")
        path, session_id = found
        expire_session(self.zk_connect, session_id)
        after = self.registration(bookie_id)
        if after is not None and after[1] == session_id:  # ZooKeeper deletes ephemerals before it answers
            raise FaultSetupError(f"{path} still held by session 0x{session_id:x} after it was expired")
        return session_id

    def wait_registered(self, bookie_id: str, expired: int, within: float) -> tuple[str, int]:
        """Until the bookie is registered again by another session than ``expired``: ``(path, session id)``.
        Raises ``TimeoutError`` after ``within`` seconds."""
        deadline = time.monotonic() + within
        while True:
            found = self.registration(bookie_id)
            if found is not None and found[1] != expired:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{bookie_id} not registered again within {within} s of the expiry of its "
                                   f"session 0x{expired:x} (now: {found})")
            time.sleep(0.05)


# ------------------------------------------------------------------ failing devices (libfiu)
#
# libfiu's preloaded POSIX wrappers stand in front of libc's: a call whose failure point is enabled returns -1
# with the errno given as its failinfo, without reaching the kernel (a failed pwrite writes nothing), exactly
# what a device answering EIO looks like to the process. They reach what goes through libc's dynamic symbols:
# our bookie's C journal writer (pwrite, fdatasync, fsync), its Python entry logs (os.pwrite, os.fdatasync),
# RocksDB's syncs, and the JVM's FileChannel (write for appends, fdatasync for force(false)).

# The calls a scenario may fail, by libfiu's failure point: those a bookie makes on its disks only.
FAILABLE_CALLS = {"pwrite": "posix/io/rw/pwrite", "fsync": "posix/io/sync/fsync",
                  "fdatasync": "posix/io/sync/fdatasync"}


def _libfiu_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise FaultSetupError(f"failing a device's calls needs libfiu's {name} (Debian's fiu-utils and libfiu0: "
                              "scripts/bootstrap.d/fiu.sh installs them)")
    return found


def start_under_libfiu(bookie: Any, control: Path) -> None:
    """Start the stopped ``bookie`` with libfiu's POSIX wrappers preloaded and its remote control listening on
    named pipes beside ``control`` (``<control>-<pid>.in``); nothing fails until ``fail_calls``. The bookie's
    later starts are plain again."""
    if bookie.running:
        raise FaultSetupError(f"{bookie.bookie_id} must be stopped before it is started under libfiu")
    fiu_run = _libfiu_tool("fiu-run")
    control.parent.mkdir(parents=True, exist_ok=True)
    plain = bookie.command
    # The bookie's own command, preloaded: fiu-run execs it, so the process keeps the pid start() records.
    vars(bookie)["command"] = lambda: [fiu_run, "-x", "-f", str(control), *plain()]
    try:
        bookie.start()
    finally:
        del vars(bookie)["command"]
    fifo = Path(f"{control}-{bookie.proc.pid}.in")
    if not fifo.exists():
        raise FaultSetupError(f"{bookie.bookie_id} started under fiu-run but libfiu's control pipe {fifo} is "
                              "missing (the preload did not load)")


def fail_calls(bookie: Any, control: Path, calls: Sequence[str], number: int = errno.EIO) -> None:
    """From now on, every ``calls`` (names of ``FAILABLE_CALLS``) of the running ``bookie`` fails with
    ``number`` (EIO by default). The bookie must have been started by ``start_under_libfiu`` with ``control``."""
    unknown = sorted(set(calls) - set(FAILABLE_CALLS))
    if unknown or not calls:
        raise ValueError(f"calls to fail must be some of {', '.join(FAILABLE_CALLS)}, not {list(calls)}")
    if not bookie.running:
        raise FaultSetupError(f"failing {bookie.bookie_id}'s {', '.join(calls)}: it is not running")
    command = [_libfiu_tool("fiu-ctrl"), "-f", str(control)]
    for call in calls:
        command += ["-c", f"enable name={FAILABLE_CALLS[call]},failinfo={number}"]
    what = f"failing {bookie.bookie_id}'s {', '.join(calls)} with errno {number}"
    _run(what, [*command, str(bookie.proc.pid)], quiet=True)
