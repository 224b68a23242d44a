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
are offered (``FAILABLE_CALLS``). One directory only: ``DeviceFault(bookie, bookie.ledger_dir, workdir, calls)``, a
preloaded library of our own (eio_under.c) that fails those calls on files under that directory with EIO while
switched on (``fail(after=n)``, ``lift()``), whatever else the process does; with ``mode="stall"`` they block
instead while it is on, and are made once it is lifted (a device that stops answering for a while); with
``mode="slow"`` each is delayed by ``delay_ms`` while it is on (a device that answers, slowly).

Clocks: ``WallClock(bookie, workdir)``: ``start()`` starts a stopped bookie (either implementation) with a preloaded
library of our own (wall_clock_offset.c), its wall clock on time; ``step(seconds)`` then sets that clock off the
true time by ``seconds`` (an NTP step, a virtual machine restored from a snapshot) and returns once the bookie's
log says it took the step. Only the wall clock moves (``CLOCK_REALTIME`` and what is built on it): the monotonic
clocks stay true, as they do on a real machine when its time of day is stepped.

Links: ``Partition(address, port)`` drops every packet to and from one bookie's address and port (nftables);
``LossyLink(address, port, loss_percent=, kbytes_per_s=)`` drops a share of them and caps the rate instead;
``DelayedLink(address, port, delay_ms=)`` delays everything either way by a fixed time instead (new connections,
through a relay of ours).

ZooKeeper sessions: ``SessionExpiry(zk_connect, ledgers_root)`` expires the session a running bookie (either
implementation) registered itself with, for real, on ZooKeeper's side (``expire``), and waits for the bookie to
register again (``wait_registered``); ``expire_session`` does it for any session id.

A fault that cannot be set up here (no permission to mount, say) raises ``FaultSetupError`` naming what was
tried and why it failed: scenarios fail with it, they never skip.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import hashlib
import ipaddress
import itertools
import json
import os
import queue
import random
import shutil
import socket
import subprocess
import threading
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

# ------------------------------------------------------------------ network partitions
#
# How a bookie is cut off, and why this way: every test bookie listens on an address of its own (127.0.0.x) and a
# port of its own, so rules that match that address and port touch no other test's traffic on this machine, and a
# client's connections to it and its answers back are all that is dropped (its own ZooKeeper session, made from
# another port, stays up). The rules live in an nftables table of their own, named after the test process, so
# removing them is deleting that table (atomic, and nothing else on the machine is edited: kube-proxy's and
# kube-router's chains stay untouched). Drop, not reject: a partition answers nothing, so the client has to find
# out by its own timeouts, as it would on a real network. On loopback every packet passes the output hook, so one
# output chain catches both directions. The tables of a test process are removed by its scenario's finalizer and
# again at the end of its session; a run killed before either leaves tables whose process is gone, removed at the
# start of the next session (``remove_partitions``).

PARTITION_TABLE_PREFIX = "bookie_fleet_partition_"


def _nft(what: str, args: list[str], script: str | None = None) -> str:
    try:
        proc = subprocess.run(["nft", *args], input=script, check=True, capture_output=True, text=True, timeout=30)
    except FileNotFoundError as exc:
        raise FaultSetupError(f"{what}: nft is not installed ({exc}); the nftables package provides it") from None
    except subprocess.CalledProcessError as exc:
        raise FaultSetupError(f"{what}: `nft {' '.join(args)}` failed ({exc.returncode}): "
                              f"{exc.stderr.strip() or exc.stdout.strip()}") from None
    return proc.stdout


PARTITION_DIRECTIONS = ("both", "to", "from")


class Partition:
    """Drops every TCP packet to and from ``address:port`` (one bookie's port) while cut:
    ``with Partition(bookie.address, bookie.port) as cut: ...; cut.heal()``; leaving the block heals it too.
    ``direction``: ``"to"`` drops only what is sent to it, ``"from"`` only what it sends (an asymmetric cut: its
    requests arrive and its answers are lost, or the reverse)."""

    _tables = itertools.count()

    def __init__(self, address: str, port: int, direction: str = "both") -> None:
        parsed = ipaddress.ip_address(address)
        if parsed.version != 4:
            raise ValueError(f"a partition matches an IPv4 bookie address, not {address!r}")
        if not 0 < port < 65536:
            raise ValueError(f"a partition needs a TCP port from 1 to 65535, not {port}")
        if direction not in PARTITION_DIRECTIONS:
            raise ValueError(f"a partition cuts {', '.join(PARTITION_DIRECTIONS)}, not {direction!r}")
        self.address = str(parsed)
        self.port = port
        self.direction = direction
        self.table = f"{PARTITION_TABLE_PREFIX}{os.getpid()}_{next(self._tables)}"
        self.cut_now = False

    def _drops(self) -> list[str]:
        """What is dropped of each direction's packets (nftables statements after the match)."""
        return ["drop"]

    def cut(self) -> None:
        to, back = f"ip daddr {self.address} tcp dport {self.port}", f"ip saddr {self.address} tcp sport {self.port}"
        matches = {"both": (to, back), "to": (to,), "from": (back,)}[self.direction]
        rules = "\n".join(f"        {match} {drop}" for drop in self._drops() for match in matches)
        _nft(f"cutting {self.address}:{self.port} off", ["-f", "-"], f"""
table inet {self.table} {{
    chain output {{
        type filter hook output priority filter - 10; policy accept;
{rules}
    }}
}}
""")
        self.cut_now = True

    def heal(self) -> None:
        if self.cut_now:
            _nft(f"healing the partition of {self.address}:{self.port}", ["delete", "table", "inet", self.table])
            self.cut_now = False

    def __enter__(self) -> Partition:
        self.cut()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.heal()


class LossyLink(Partition):
    """A poor link to ``address:port`` rather than none: each packet either way dropped with a chance of
    ``loss_percent``, and what goes over ``kbytes_per_s`` either way dropped too (a policer, so TCP slows down to
    it). TCP retransmits what was lost, after its retransmission timeout (200 ms at least), so the bookie's
    requests and answers arrive late, in pieces and in bursts. This kernel has no ``netem`` queueing discipline
    (``CONFIG_NET_SCH_NETEM``); nftables draws the losses (``numgen random``), and a fixed added delay is
    ``DelayedLink``'s.
    Made and healed like a ``Partition`` (``cut()``, ``heal()``, a table of its own)."""

    def __init__(self, address: str, port: int, *, loss_percent: int, kbytes_per_s: int) -> None:
        super().__init__(address, port)
        if not 0 <= loss_percent < 100:
            raise ValueError(f"a lossy link loses 0 to 99 % of its packets, not {loss_percent}")
        if kbytes_per_s < 1:
            raise ValueError(f"a lossy link carries at least 1 kbyte/s, not {kbytes_per_s}")
        self.loss_percent = loss_percent
        self.kbytes_per_s = kbytes_per_s

    def _drops(self) -> list[str]:
        return [f"numgen random mod 100 < {self.loss_percent} drop",
                f"limit rate over {self.kbytes_per_s} kbytes/second drop"]


def partition_tables() -> list[str]:
    """The partition tables on this machine, of any process."""
    listed = json.loads(_nft("listing nftables tables", ["-j", "list", "tables"]))
    return [item["table"]["name"] for item in listed.get("nftables", [])
            if "table" in item and item["table"]["family"] == "inet"
            and item["table"]["name"].startswith(PARTITION_TABLE_PREFIX)]


def remove_partitions(*, owner: int | None = None) -> list[str]:
    """Delete the partition tables (and the cgroups of ``ProcessPartition``) of process ``owner``, or
    (``None``) those whose process is gone; returns the tables."""
    def doomed(name: str) -> bool:
        pid = int(name[len(PARTITION_TABLE_PREFIX):].split("_", 1)[0])
        return pid == owner or (owner is None and not Path(f"/proc/{pid}").exists())

    if shutil.which("nft") is None:
        return []  # no nftables here: no partition was made either, and scenarios without one must still run
    removed = []
    for table in partition_tables():
        if doomed(table):
            _nft(f"removing the leftover partition {table}", ["delete", "table", "inet", table])
            removed.append(table)
    with contextlib.suppress(FaultSetupError):  # no cgroup2 here: no cgroup was made either
        for group in _cgroup2_root().glob(f"{PARTITION_TABLE_PREFIX}*"):
            if doomed(group.name):
                _leave_cgroup(group)
    return removed


class DelayedLink:
    """A long link to ``address:port`` (another zone, another region) rather than a poor one: every piece of data
    either way arrives ``delay_ms`` later than it was sent, nothing lost, the bandwidth untouched. With
    ``jitter_ms``, each piece a seeded 0 to ``jitter_ms`` later still, never before the piece sent ahead of it on
    its connection (TCP hands the receiver a stream in order, whatever its packets did): a path whose queues fill
    and drain. ``added_ms`` keeps the delay each piece got, the last ``ADDED_KEPT``.

    This kernel has no ``netem`` queueing discipline, so the delay is added in user space: nftables redirects new
    connections to the bookie's address and port (``redirect`` in the output hook's nat chain) to a relay of ours,
    run on a thread of this process, which holds what it reads for ``delay_ms`` before writing it on, each direction
    in order; its own connections to the bookie carry a mark (``SO_MARK``) the rule lets through. NAT acts when a
    connection is set up, so only connections made after ``cut()`` are delayed: open the client after it. ``heal()``
    stops the redirection and passes data on at once from then on (connections made through the relay go on through
    it); ``close()`` (or leaving the block) ends them and the relay. Not for ``cut_until_the_end``, whose heal
    would leave the relay running: call ``close()`` in a ``finally``.
    The table has a partition table's name, so ``remove_partitions`` cleans up after a killed run."""

    MARK = 0x6B6F  # on the relay's own connections to the bookie: never redirected
    QUEUED_CHUNKS = 256  # per direction, up to 64 KiB each: what a relay holds before it stops reading
    ADDED_KEPT = 10_000

    def __init__(self, address: str, port: int, *, delay_ms: int, jitter_ms: int = 0, seed: int = 0) -> None:
        if not 0 < delay_ms <= 60_000:
            raise ValueError(f"a long link adds 1 to 60,000 ms each way, not {delay_ms}")
        if not 0 <= jitter_ms <= 60_000:
            raise ValueError(f"a long link's jitter is 0 to 60,000 ms, not {jitter_ms}")
        self.target = Partition(address, port)  # its table, address and port checks
        self.delay_s = delay_ms / 1000
        self.delay_ms, self.jitter_ms = delay_ms, jitter_ms
        self._jitter = random.Random(seed)  # drawn on the relay's thread only
        self.added_ms: collections.deque[float] = collections.deque(maxlen=self.ADDED_KEPT)
        self.relayed = 0  # connections relayed so far
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def cut(self) -> None:
        ready: queue.Queue[int | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=asyncio.run, args=(self._relay(ready),), daemon=True,
                                        name=f"delayed-link-{self.target.address}:{self.target.port}")
        self._thread.start()
        relay_port = ready.get(timeout=30)
        if isinstance(relay_port, BaseException):
            raise FaultSetupError(f"starting the relay of a long link to {self.target.address}:{self.target.port}: "
                                  f"{relay_port!r}")
        target = f"ip daddr {self.target.address} tcp dport {self.target.port}"
        try:
            _nft(f"redirecting {self.target.address}:{self.target.port} through a long link", ["-f", "-"], f"""
table inet {self.target.table} {{
    chain output {{
        type nat hook output priority -100; policy accept;
        meta mark {self.MARK:#x} accept
        {target} redirect to :{relay_port}
    }}
}}
""")
        except FaultSetupError:
            self.close()
            raise
        self.target.cut_now = True

    def heal(self) -> None:
        """New connections go straight to the bookie again, and the relay stops delaying."""
        self.delay_s, self.jitter_ms = 0.0, 0
        self.target.heal()

    def close(self) -> None:
        self.heal()
        if self._loop is not None and self._stopping is not None and self._thread is not None:
            with contextlib.suppress(RuntimeError):  # its loop already ended
                self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> DelayedLink:
        self.cut()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def _relay(self, ready: queue.Queue[int | BaseException]) -> None:
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        connections: set[asyncio.Task[Any]] = set()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:  # always, in a connection's callback: kept to be cancelled at close()
                connections.add(task)
                task.add_done_callback(connections.discard)
            await self._connection(reader, writer)

        try:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
        except OSError as exc:
            ready.put(exc)
            return
        async with server:
            ready.put(server.sockets[0].getsockname()[1])
            await self._stopping.wait()
            server.close()
            for task in list(connections):
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

    async def _connection(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.relayed += 1
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        upstream.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, self.MARK)
        upstream.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(upstream, (self.target.address, self.target.port))
            bookie_reader, bookie_writer = await asyncio.open_connection(sock=upstream)
        except OSError:
            upstream.close()
            client_writer.close()
            return
        try:
            await asyncio.gather(self._pass_on(client_reader, bookie_writer),
                                 self._pass_on(bookie_reader, client_writer))
        finally:
            for writer in (client_writer, bookie_writer):
                writer.close()

    async def _pass_on(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """What ``source`` says, written to ``sink`` ``delay_s`` after it was read, in order; then its end. As on a
        wire, what one side sent before it closed (or reset) the connection still reaches the other; what is sent
        to a side that is gone is lost."""
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(self.QUEUED_CHUNKS)

        async def write_when_due() -> None:
            receiver_gone = False
            while True:
                due, data = await held.get()
                if not data:
                    if not receiver_gone and sink.can_write_eof():
                        with contextlib.suppress(OSError):
                            sink.write_eof()
                    return
                if receiver_gone:
                    continue  # taken off the queue all the same, so the reader never waits for room
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                try:
                    sink.write(data)
                    await sink.drain()
                except OSError:
                    receiver_gone = True

        writing = asyncio.create_task(write_when_due())
        due_last = 0.0
        try:
            while True:
                try:
                    data = await source.read(65536)
                except OSError:
                    data = b""  # the sender reset the connection: its end, after what it sent before
                now = loop.time()
                jitter_s = self._jitter.uniform(0, self.jitter_ms) / 1000 if self.jitter_ms else 0.0
                due_last = max(due_last, now + self.delay_s + jitter_s)  # never ahead of what was sent before
                self.added_ms.append((due_last - now) * 1000)
                await held.put((due_last, data))
                if not data:
                    break
            await writing
        finally:
            writing.cancel()


# A bookie cut off from ZooKeeper only: its ZooKeeper connections leave from 127.0.0.1 like everyone's, so no
# address or port tells them apart before they exist. The bookie's processes are moved into a cgroup (v2) of their
# own, and nftables drops what a socket of that cgroup sends to ZooKeeper's address and port (``socket cgroupv2``:
# a socket belongs to the cgroup of the process that created it), which catches every reconnection attempt; its
# connections made before the move are matched by their own ports, both ways. Its client port is not touched.


def _cgroup2_root() -> Path:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return Path(fields[1])
    raise FaultSetupError("cutting a process off ZooKeeper: no cgroup2 file system is mounted (/proc/self/mounts); "
                          "nftables matches a process's sockets by their cgroup v2")


def _leave_cgroup(group: Path, back_to: Path | None = None) -> None:
    """Move the processes of ``group`` back to ``back_to`` (default: the root cgroup), then remove it."""
    with contextlib.suppress(FileNotFoundError):
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):  # it may have exited meanwhile
                ((back_to or group.parent) / "cgroup.procs").write_text(pid)
        group.rmdir()


def _cgroup_of(pid: int, root: Path) -> Path:
    """The cgroup (v2) of process ``pid``, as a directory under ``root``."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return root / line[3:].lstrip("/")
    return root


def process_group(leader: int) -> list[int]:
    """The processes of ``leader``'s process group (a bookie and whatever it started)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            after_name = stat.read_text().rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses
            if int(after_name[2]) == leader:
                members.append(int(stat.parent.name))
    return members


def tcp_ports_to(pids: list[int], port: int) -> list[int]:
    """Local ports of the IPv4 TCP connections that processes ``pids`` hold to remote port ``port``."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[len("socket:["):-1])
    ports = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if inode in inodes and int(remote.split(":")[1], 16) == port:
            ports.append(int(local.split(":")[1], 16))
    return sorted(set(ports))


class ProcessPartition:
    """Cuts the processes of ``leader``'s process group off ``host:port`` and the ``also`` (host, port) pairs
    (ZooKeeper, another bookie, a writer's ensemble: ``peer`` names them in messages) while cut; every other
    connection of theirs goes on. ``with ProcessPartition(bookie.proc.pid, host, port) as cut: ...``."""

    def __init__(self, leader: int, host: str, port: int, peer: str = "ZooKeeper", *,
                 also: Sequence[tuple[str, int]] = ()) -> None:
        if not Path(f"/proc/{leader}").exists():
            raise ValueError(f"no process {leader} to cut off {peer}")
        self.leader = leader
        self.peer = peer
        self.target = Partition(host, port)  # its table, address and port checks
        self.targets = [self.target, *(Partition(other_host, other_port) for other_host, other_port in also)]
        self.cgroup: Path | None = None
        self.origin: Path | None = None  # where its processes go back to

    def cut(self) -> None:
        root = _cgroup2_root()
        group = root / self.target.table
        try:
            # nftables names a cgroup by its path under /sys/fs/cgroup, the level from the cgroup2 mount.
            rule_path, level = group.relative_to("/sys/fs/cgroup"), len(group.relative_to(root).parts)
        except ValueError:
            raise FaultSetupError(f"cutting process {self.leader} off {self.peer}: cgroup2 is mounted on {root}, "
                                  "not under /sys/fs/cgroup where nftables looks for cgroups") from None
        self.origin = _cgroup_of(self.leader, root)
        try:
            group.mkdir()
            for pid in process_group(self.leader):
                with contextlib.suppress(ProcessLookupError):
                    (group / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            _leave_cgroup(group, self.origin)
            raise FaultSetupError(f"cutting process {self.leader} off {self.peer}: moving it into {group}: {exc}") \
                from None
        self.cgroup = group
        # After the move: every socket made from now on is the cgroup's, every older one is among these.
        members = process_group(self.leader)
        rules = []
        for each in self.targets:
            target = f"ip daddr {each.address} tcp dport {each.port}"
            rules.append(f'socket cgroupv2 level {level} "{rule_path}" {target} drop')
            ports = ",".join(map(str, tcp_ports_to(members, each.port)))
            if ports:
                rules += [f"{target} tcp sport {{ {ports} }} drop",
                          f"ip saddr {each.address} tcp sport {each.port} tcp dport {{ {ports} }} drop"]
        try:
            where = ", ".join(f"{each.address}:{each.port}" for each in self.targets)
            _nft(f"cutting process {self.leader} off {self.peer} at {where}", ["-f", "-"], f"""
table inet {self.target.table} {{
    chain output {{
        type filter hook output priority filter - 10; policy accept;
        {chr(10).join(rules)}
    }}
}}
""")
        except FaultSetupError:
            self.heal()
            raise
        self.target.cut_now = True

    def heal(self) -> None:
        self.target.heal()
        if self.cgroup is not None:
            _leave_cgroup(self.cgroup, self.origin)
            self.cgroup = None

    def __enter__(self) -> ProcessPartition:
        self.cut()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.heal()


# ------------------------------------------------------------------ a device failing under one directory (a preload)
#
# libfiu fails a call for the whole process: a JVM whose every ``pread`` fails crashes in its class loading (its
# runtime image and class-data archive are read with ``pread`` too) before it reads an entry log, and failing
# every ``write`` fails its sockets and logs. So a ledger device alone is failed by a preloaded library of our own
# (tests/support/eio_under.c, built here with the machine's C compiler), scoped by path: the chosen calls on files
# under one directory fail with EIO while a switch file exists, after the count written in it. It reaches what
# goes through libc's dynamic symbols: our entry logs (``os.pread``, ``os.pwrite``, ``os.fdatasync``), Apache
# BookKeeper's (``FileChannel``: ``pread64`` for positional reads, ``write``/``writev`` for appends,
# ``fdatasync`` for ``force(false)``) and both RocksDB indexes' reads, writes and syncs.

DEVICE_CALLS = ("read", "pread", "write", "pwrite", "writev", "fsync", "fdatasync")
DEVICE_MODES = ("fail", "stall", "slow")  # EIO, blocked until lifted, or each delayed (eio_under.c's EIO_MODE)
_EIO_UNDER_SOURCE = Path(__file__).with_name("eio_under.c")
_WALL_CLOCK_OFFSET_SOURCE = Path(__file__).with_name("wall_clock_offset.c")


def _eio_under_library(directory: Path) -> Path:
    """The failing device's preload, compiled into ``directory`` once per version of its source."""
    return _preload_library(_EIO_UNDER_SOURCE, directory, "failing a device's calls")


def _preload_library(source_path: Path, directory: Path, purpose: str) -> Path:
    """A preload of ours, compiled into ``directory`` once per version of its source."""
    source = source_path.read_bytes()
    library = directory / f"{source_path.stem}-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if not library.exists():
        directory.mkdir(parents=True, exist_ok=True)
        building = library.with_suffix(f".{os.getpid()}.tmp")
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            raise FaultSetupError(f"{purpose} needs a C compiler (cc) to build {source_path.name}; Debian's "
                                  "build-essential provides it")
        _run(f"building {source_path.name}", [compiler, "-shared", "-fPIC", "-O2", "-o", str(building),
                                             str(source_path), "-ldl"])
        building.rename(library)
    return library


def start_with_preload(bookie: Any, library: Path, env: list[str], *, wait: bool = True) -> None:
    """Start the stopped ``bookie`` (either implementation) once with ``library`` preloaded and ``env`` (``NAME=value``
    items) set; its later starts are plain again. Waiting for it to be ready (``wait``), fails unless the library
    is loaded in the started process; not waiting, the caller looks for the library's own lines in the log."""
    plain = bookie.command
    vars(bookie)["command"] = lambda: ["env", f"LD_PRELOAD={library}", *env, *plain()]
    try:
        bookie.start(wait=wait)
    finally:
        del vars(bookie)["command"]
    if not wait:
        return
    maps = Path(f"/proc/{bookie.proc.pid}/maps")
    if library.name not in maps.read_text(errors="replace"):
        raise FaultSetupError(f"{bookie.bookie_id} started without {library} loaded (LD_PRELOAD was not honoured)")


class DeviceFault:
    """``calls`` (some of ``DEVICE_CALLS``) on files under a bookie's ``under`` directory failing with EIO:
    ``fault = DeviceFault(bookie, bookie.ledger_dir, workdir, ["pread"])``; ``fault.start()`` starts the stopped
    bookie with the preload (nothing fails yet; its later starts are plain again), ``fault.fail(after=n)`` lets
    ``n`` more such calls through and fails the others from then on, ``fault.lift()`` ends it. With
    ``mode="stall"`` the calls hit block from ``fail`` until ``lift``, then are made: nothing fails, it is late.
    With ``mode="slow"`` each is delayed by ``delay_ms`` from ``fail`` until ``lift``, then made."""

    def __init__(self, bookie: Any, under: Path, workdir: Path, calls: Sequence[str], mode: str = "fail",
                 delay_ms: int | None = None) -> None:
        unknown = sorted(set(calls) - set(DEVICE_CALLS))
        if unknown or not calls:
            raise ValueError(f"calls to fail must be some of {', '.join(DEVICE_CALLS)}, not {list(calls)}")
        if mode not in DEVICE_MODES:
            raise ValueError(f"a device's calls fail, stall or slow down ({', '.join(DEVICE_MODES)}), not {mode!r}")
        if (mode == "slow") != (delay_ms is not None) or (delay_ms is not None and delay_ms <= 0):
            raise ValueError(f"a slow device needs its delay per call (a positive delay_ms), and only a slow one: "
                             f"mode {mode!r}, delay_ms {delay_ms!r}")
        if not under.is_dir():
            raise ValueError(f"calls to fail must be on files under an existing directory, not {under}")
        self.bookie = bookie
        self.under = under.resolve()
        self.calls = list(calls)
        self.mode = mode
        self.delay_ms = delay_ms
        self.switch = workdir / f"eio-{bookie.bookie_id.replace(':', '_')}"
        self.library = _eio_under_library(workdir)

    def start(self, *, failing: bool = False, after: int = 0) -> None:
        """``failing``: the calls fail from the process's first (a device found broken at start-up), or once
        ``after`` of them went through (a device that fails part-way through the start), and the bookie is not
        waited for (it may never be ready)."""
        if self.bookie.running:
            raise FaultSetupError(f"{self.bookie.bookie_id} must be stopped before it is started with a failing "
                                  "device")
        if after and not failing:
            raise ValueError("calls let through before the failure only make sense for a device failing at start")
        self.switch.unlink(missing_ok=True)
        if failing:
            self.fail(after)
        start_with_preload(self.bookie, self.library, [
            f"EIO_UNDER={self.under}", f"EIO_SWITCH={self.switch}", f"EIO_CALLS={','.join(self.calls)}",
            f"EIO_MODE={self.mode}", *([f"EIO_DELAY_MS={self.delay_ms}"] if self.delay_ms is not None else [])],
            wait=not failing)

    def fail(self, after: int = 0) -> None:
        if after < 0:
            raise ValueError(f"the calls to let through first cannot be negative: {after}")
        building = self.switch.with_suffix(".tmp")
        building.write_text(str(after))
        building.rename(self.switch)  # whole: the preload reads the count when the switch appears

    def lift(self) -> None:
        self.switch.unlink(missing_ok=True)


class WallClock:
    """A bookie's wall clock, stepped at will while it runs (see the module's docstring), by a preload of ours
    (wall_clock_offset.c) that reads the offset from a file again at most once a second, and says in the bookie's
    log each offset it takes. ``step`` returns once the running bookie's log says it took the new one."""

    TAKEN_WITHIN_S = 15.0

    def __init__(self, bookie: Any, workdir: Path) -> None:
        self.bookie = bookie
        self.library = _preload_library(_WALL_CLOCK_OFFSET_SOURCE, workdir, "stepping a wall clock")
        self.offset_file = workdir / f"clock-{bookie.bookie_id.replace(':', '_')}"
        self.offset_s = 0
        self._write(0)

    def start(self) -> None:
        """Start the stopped bookie with its clock under this offset (the offset it has now)."""
        if self.bookie.running:
            raise FaultSetupError(f"{self.bookie.bookie_id} must be stopped before it is started with a steppable "
                                  "clock")
        since = self._log_size()
        start_with_preload(self.bookie, self.library, [f"WALL_CLOCK_OFFSET_FILE={self.offset_file}"])
        if self.offset_s:
            self._until_taken(since)

    def step(self, offset_s: int) -> None:
        """The bookie's wall clock set to the true time plus ``offset_s`` (negative: behind); a running bookie's
        once its log says it took it, a stopped one's from its next ``start``."""
        since = self._log_size()
        changed = offset_s != self.offset_s
        self._write(offset_s)
        if changed and self.bookie.running:
            self._until_taken(since)

    def _until_taken(self, since: int) -> None:
        said = f"wall_clock_offset: {self.offset_s:+d} s\n"
        deadline = time.monotonic() + self.TAKEN_WITHIN_S
        while said not in self._log_from(since):
            if time.monotonic() > deadline:
                raise FaultSetupError(f"{self.bookie.bookie_id} did not take the wall clock offset "
                                      f"{self.offset_s:+d} s within {self.TAKEN_WITHIN_S:.0f} s (its log never "
                                      f"said {said.strip()!r})")
            time.sleep(0.1)

    def _log_size(self) -> int:
        try:
            return int(self.bookie.log_path.stat().st_size)
        except FileNotFoundError:
            return 0

    def _log_from(self, offset: int) -> str:
        with self.bookie.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def _write(self, offset_s: int) -> None:
        building = self.offset_file.with_suffix(".tmp")
        building.write_text(f"{offset_s:+d}\n")
        building.rename(self.offset_file)  # whole: the preload never reads half a line
        self.offset_s = offset_s
