"""The power-loss file system served over FUSE: ``python -m tests.support.powerloss.fs MOUNTPOINT CONTROL_SOCKET``.

The state and its durability rules are ``model.PageCacheFs``; this module serves it to the kernel through
mfusepy (ctypes over Debian's libfuse3: no compiler or headers needed, unlike pyfuse3, and fast enough for a
bookie's group-committed journal and megabyte entry-log writes) and takes commands on a Unix socket, one JSON
object a line, answered the same way (``mount.PowerLossFs`` is the client):

- ``{"op": "cut", "zone": Z}``: a power cut in zone Z (``PageCacheFs.cut``); answers what was lost. With
  ``"seed": S``, a random subset of the dirty pages survives it (``model``'s module docstring).
- ``{"op": "sync", "zone": Z}``: everything in Z durable, for setting a scene up.
- ``{"op": "arm", "zone": Z, "after": N, "pid": P, "match": REGEX}``: cut the power *before* the N-th changing
  operation (write, truncate, fallocate, fsync, create, mkdir, unlink, rmdir, rename, link) in Z on a path
  matching REGEX: process group P is SIGKILLed, that operation and every later change in Z fail with EIO and
  change nothing, until the ``cut``. ``after`` null only counts. ``{"op": "armed", "zone": Z}`` tells
  whether it fired, where, and how many matching operations it saw.

The kernel keeps nothing the model does not know: every file is ``direct_io`` (no page cache in the kernel),
names and attributes are never cached (timeouts 0), and unlinked open files really go (``hard_remove``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import mfusepy

from tests.support.powerloss.model import FsError, Node, PageCacheFs

FSNAME_PREFIX = "powerloss-fs"
_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02
_RENAME_NOREPLACE = 0x1
T = TypeVar("T")


@dataclass
class Trigger:
    """An armed power cut (see the module docstring)."""

    after: int | None
    pid: int
    match: re.Pattern[str]
    seen: int = 0
    fired_at: str | None = None


class PowerLossOps(mfusepy.Operations):
    """FUSE operations over ``PageCacheFs``, one lock around each."""

    use_ns = True
    flag_nullpath_ok = True
    flag_nopath = True

    def __init__(self) -> None:
        self.fs = PageCacheFs()
        self._mutex = threading.Lock()
        self.triggers: dict[str, Trigger] = {}
        self.frozen: set[str] = set()

    # ------------------------------------------------------------------ helpers
    def _call(self, fn: Callable[[], T]) -> T:
        with self._mutex:
            try:
                return fn()
            except FsError as exc:
                raise mfusepy.FuseOSError(exc.errno or errno.EIO) from None

    def _change(self, zone: str, path: str) -> None:
        """Before a changing operation: refuse it in a cut zone, count it, and cut the power if armed."""
        if zone in self.frozen:
            raise FsError(errno.EIO, f"{path}: the power is off")
        trigger = self.triggers.get(zone)
        if trigger is None or trigger.fired_at is not None or not trigger.match.search(path):
            return
        trigger.seen += 1
        if trigger.after is not None and trigger.seen >= trigger.after:
            trigger.fired_at = path
            self.frozen.add(zone)
            try:
                os.killpg(trigger.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            raise FsError(errno.EIO, f"{path}: the power went off")

    def _node(self, path: str | None, fh: int | None) -> Node:
        if fh:
            return self.fs.handle(fh)
        if path is None:
            raise FsError(errno.EBADF, "no path and no handle")
        return self.fs.resolve(path)

    # ------------------------------------------------------------------ attributes and names
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        return self._call(lambda: self.fs.attributes(self._node(path, fh)))

    def access(self, path: str, amode: int) -> int:
        self._call(lambda: self.fs.resolve(path))
        return 0

    def readdir(self, path: str, fh: int) -> list[tuple[str, dict[str, int], int]]:
        # With use_ino the inode numbers given here reach readdir(3), which skips entries numbered 0.
        def run() -> list[tuple[str, dict[str, int], int]]:
            node = self._node(path, fh)
            listing = [(".", node.ino, node.mode), ("..", node.ino, node.mode)]
            listing += [(name, ino, self.fs.nodes[ino].mode) for name, ino in node.entries.items()]
            return [(name, {"st_ino": ino, "st_mode": mode}, 0) for name, ino, mode in listing]
        return self._call(run)

    def opendir(self, path: str) -> int:
        def run() -> int:
            node = self.fs.resolve(path)
            if not node.is_dir:
                raise FsError(errno.ENOTDIR, path)
            return self.fs.open_node(node)
        return self._call(run)

    def releasedir(self, path: str, fh: int) -> int:
        self._call(lambda: self.fs.release(fh))
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        def run() -> None:
            self._change(self.fs.zone_of(path), path)
            self.fs.mkdir(path, mode)
        self._call(run)
        return 0

    def rmdir(self, path: str) -> int:
        def run() -> None:
            self._change(self.fs.zone_of(path), path)
            self.fs.rmdir(path)
        self._call(run)
        return 0

    def unlink(self, path: str) -> int:
        def run() -> None:
            self._change(self.fs.zone_of(path), path)
            self.fs.unlink(path)
        self._call(run)
        return 0

    def link(self, target: str, source: str) -> int:
        def run() -> None:
            self._change(self.fs.zone_of(target), target)
            self.fs.link(source, target)
        self._call(run)
        return 0

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        def run() -> None:
            if flags & ~_RENAME_NOREPLACE:
                raise FsError(errno.EINVAL, f"rename flags {flags:#x}")
            self._change(self.fs.zone_of(new), new)
            self.fs.rename(old, new, noreplace=bool(flags & _RENAME_NOREPLACE))
        self._call(run)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        def run() -> None:
            node = self.fs.resolve(path)
            node.mode = (node.mode & ~0o7777) | (mode & 0o7777)
        self._call(run)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        self._call(lambda: self.fs.resolve(path))
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        def run() -> None:
            node = self.fs.resolve(path)
            if times is not None:
                node.mtime_ns = int(times[1])
        self._call(run)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        total = 64 * 1024**3 // 4096
        with self._mutex:
            used = (self.fs.used_bytes() + 4095) // 4096
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": total, "f_bfree": total - used,
                "f_bavail": total - used, "f_files": 1 << 20, "f_ffree": (1 << 20) - len(self.fs.nodes),
                "f_namemax": 255}

    # ------------------------------------------------------------------ files
    def create(self, path: str, mode: int, fi: int | None = None) -> int:
        def run() -> int:
            self._change(self.fs.zone_of(path), path)
            return self.fs.create(path, mode)
        return self._call(run)

    def open(self, path: str, flags: int) -> int:
        def run() -> int:
            node = self.fs.resolve(path)
            if node.is_dir and flags & (os.O_WRONLY | os.O_RDWR):
                raise FsError(errno.EISDIR, path)
            return self.fs.open_node(node)
        return self._call(run)

    def release(self, path: str, fh: int) -> int:
        self._call(lambda: self.fs.release(fh))
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return self._call(lambda: self.fs.read(self._node(path, fh), size, offset))

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        def run() -> int:
            node = self._node(path, fh)
            self._change(node.zone, node.path)
            return self.fs.write(node, data, offset)
        return self._call(run)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        def run() -> None:
            node = self._node(path, fh)
            self._change(node.zone, node.path)
            self.fs.truncate(node, length)
        self._call(run)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        def run() -> None:
            node = self._node(path, fh)
            if mode & ~(_FALLOC_FL_KEEP_SIZE | _FALLOC_FL_PUNCH_HOLE):
                raise FsError(errno.EOPNOTSUPP, f"fallocate mode {mode:#x}")
            self._change(node.zone, node.path)
            if mode & _FALLOC_FL_PUNCH_HOLE:
                self.fs.punch(node, offset, size)
            elif not mode & _FALLOC_FL_KEEP_SIZE:
                self.fs.allocate(node, offset, size)
        self._call(run)
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        def run() -> None:
            node = self._node(path, fh)
            self._change(node.zone, node.path)
            self.fs.sync_file(node)
        self._call(run)
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        def run() -> None:
            node = self._node(path, fh)
            self._change(node.zone, node.path)
            self.fs.sync_dir(node)
        self._call(run)
        return 0

    # ------------------------------------------------------------------ control
    def command(self, request: dict[str, Any]) -> dict[str, Any]:
        op, zone = request.get("op"), str(request.get("zone", ""))
        with self._mutex:
            if op == "ping":
                return {"ok": True}
            if op == "sync":
                self.fs.sync_zone(zone)
                return {"ok": True}
            if op == "cut":
                self.frozen.discard(zone)
                self.triggers.pop(zone, None)
                seed = request.get("seed")
                return {"ok": True, **asdict(self.fs.cut(zone, None if seed is None else int(seed)))}
            if op == "arm":
                after = request.get("after")
                self.triggers[zone] = Trigger(None if after is None else int(after), int(request.get("pid", 0)),
                                              re.compile(request.get("match") or ""))
                return {"ok": True}
            if op == "armed":
                trigger = self.triggers.get(zone)
                if trigger is None:
                    return {"ok": True, "armed": False, "fired": zone in self.frozen, "seen": 0, "at": None}
                return {"ok": True, "armed": True, "fired": trigger.fired_at is not None, "seen": trigger.seen,
                        "at": trigger.fired_at}
            if op == "disarm":
                self.triggers.pop(zone, None)
                return {"ok": True}
        return {"ok": False, "error": f"unknown command {op!r}"}


class _Fuse(mfusepy.FUSE):
    """mfusepy's libfuse 3 ``rename`` drops its flags; RENAME_NOREPLACE must not silently replace."""

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return int(self.operations.rename(old.decode(), new.decode(), flags))


def serve_control(ops: PowerLossOps, path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)

    def client(conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as stream:
            for line in stream:
                try:
                    answer = ops.command(json.loads(line))
                except Exception as exc:  # a bad command is answered, never kills the file system
                    answer = {"ok": False, "error": repr(exc)}
                stream.write(json.dumps(answer).encode() + b"\n")
                stream.flush()

    while True:
        conn, _ = server.accept()
        threading.Thread(target=client, args=(conn,), daemon=True).start()


def main(argv: list[str]) -> None:
    mountpoint, control = argv
    ops = PowerLossOps()
    threading.Thread(target=serve_control, args=(ops, control), daemon=True).start()
    _Fuse(ops, mountpoint, foreground=True, fsname=f"{FSNAME_PREFIX}-{os.getpid()}", subtype="powerloss",
          direct_io=True, hard_remove=True, use_ino=True, entry_timeout=0, attr_timeout=0, negative_timeout=0,
          auto_unmount=True)


if __name__ == "__main__":
    main(sys.argv[1:])
