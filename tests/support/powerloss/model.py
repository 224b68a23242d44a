"""What a disk holds after a power cut: a file system whose unsynced changes are volatile, as in a page cache.

Every file and directory has two states. The *current* one is what processes see. The *durable* one is what
survives a power cut:

- a file's bytes and size become durable when the file is fsynced or fdatasynced (any name of it, any handle);
- a directory's entries (creations, unlinks, renames, hard links, mkdir, rmdir) become durable when that
  directory is fsynced. A file whose data was fsynced but whose name was never made durable by an fsync of
  its directory is gone after a cut, as is everything under a directory whose own entry was not durable.

``cut`` throws the current state of a zone away and rebuilds it from the durable one, as a machine that lost
power would find its disk. By default every unsynced change is lost. ``cut(zone, seed=S)`` models a disk that
wrote back dirty pages in any order before the power went: each dirty 4 KiB page of a file (``PAGE``) reached
the disk with probability 1/2 (a ``random.Random(S)``, so a failing cut can be replayed), with its current
bytes; a surviving page past the durable size extends the file to that page's current end, zeros in any gap.
Only data pages are written back early: directory entries still follow the rule above.

Zones are the top-level directories of the file system (one per bookie under test): creating one is durable at
once (a volume that was provisioned), and a cut in one leaves the others alone.

Inodes are never reused: a process that held one across a cut gets ``ESTALE``. The model is pure (no I/O);
``bookie``'s power-loss tests serve it over FUSE (``tests.support.powerloss.fs``).
"""

from __future__ import annotations

import errno
import random
import stat
import time
from dataclasses import dataclass, field

ROOT_INO = 1
PAGE = 4096  # the unit a random-subset cut keeps or drops (module docstring)
_DIR_MODE = stat.S_IFDIR | 0o755


class FsError(OSError):
    def __init__(self, code: int, what: str = "") -> None:
        super().__init__(code, f"{errno.errorcode.get(code, code)}: {what}" if what else errno.errorcode.get(code))


@dataclass(eq=False)
class Node:
    ino: int
    mode: int
    zone: str
    path: str                                   # the name it was last given (for cut filters and errors)
    data: bytearray = field(default_factory=bytearray)       # file: current bytes
    durable: bytearray = field(default_factory=bytearray)    # file: bytes that survive a cut
    dirty: list[list[int]] = field(default_factory=list)     # file: [start, end) ranges changed since a sync
    entries: dict[str, int] = field(default_factory=dict)          # directory: current name -> inode
    durable_entries: dict[str, int] = field(default_factory=dict)  # directory: names that survive a cut
    links: int = 0          # current names
    durable_links: int = 0  # durable names
    opens: int = 0
    mtime_ns: int = field(default_factory=time.time_ns)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    def mark(self, start: int, end: int) -> None:
        """Record a changed range, merged with the last one when they touch (sequential writes)."""
        if end <= start:
            return
        if self.dirty and self.dirty[-1][0] <= end and start <= self.dirty[-1][1]:
            last = self.dirty[-1]
            last[0], last[1] = min(last[0], start), max(last[1], end)
            return
        self.dirty.append([start, end])


@dataclass
class CutReport:
    """What a cut threw away."""

    files_reverted: int = 0
    bytes_lost: int = 0
    names_lost: list[str] = field(default_factory=list)
    inodes_dropped: int = 0
    pages_kept: int = 0     # dirty pages a random-subset cut let reach the disk


class PageCacheFs:
    """The file system's state (not thread-safe: the FUSE adapter holds one lock around every call)."""

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {ROOT_INO: Node(ROOT_INO, _DIR_MODE, "", "/", links=1, durable_links=1)}
        self._next_ino = ROOT_INO + 1
        self.handles: dict[int, Node] = {}
        self._next_fh = 1

    # ------------------------------------------------------------------ look-ups
    def resolve(self, path: str) -> Node:
        node = self.nodes[ROOT_INO]
        for part in _parts(path):
            if not node.is_dir:
                raise FsError(errno.ENOTDIR, path)
            ino = node.entries.get(part)
            if ino is None:
                raise FsError(errno.ENOENT, path)
            node = self.nodes[ino]
        return node

    def handle(self, fh: int) -> Node:
        node = self.handles.get(fh)
        if node is None or node.ino not in self.nodes:
            raise FsError(errno.ESTALE, f"handle {fh}")
        return node

    def parent_of(self, path: str) -> tuple[Node, str]:
        parts = _parts(path)
        if not parts:
            raise FsError(errno.EINVAL, "the root has no parent")
        parent = self.resolve("/" + "/".join(parts[:-1]))
        if not parent.is_dir:
            raise FsError(errno.ENOTDIR, path)
        return parent, parts[-1]

    def zone_of(self, path: str) -> str:
        parts = _parts(path)
        return parts[0] if parts else ""

    # ------------------------------------------------------------------ names
    def _new_node(self, parent: Node, name: str, mode: int) -> Node:
        zone = parent.zone or name
        node = Node(self._next_ino, mode, zone, _join(parent.path, name))
        self._next_ino += 1
        self.nodes[node.ino] = node
        return node

    def _link(self, parent: Node, name: str, node: Node) -> None:
        parent.entries[name] = node.ino
        node.links += 1
        parent.mtime_ns = time.time_ns()
        if parent.ino == ROOT_INO:  # a new zone: provisioned, durable at once
            parent.durable_entries[name] = node.ino
            node.durable_links += 1

    def _unlink(self, parent: Node, name: str) -> Node:
        node = self.nodes[parent.entries.pop(name)]
        node.links -= 1
        parent.mtime_ns = time.time_ns()
        self._maybe_free(node)
        return node

    def _maybe_free(self, node: Node) -> None:
        if node.links <= 0 and node.durable_links <= 0 and node.opens <= 0 and node.ino != ROOT_INO:
            self.nodes.pop(node.ino, None)

    def create(self, path: str, mode: int) -> int:
        parent, name = self.parent_of(path)
        if name in parent.entries:
            node = self.nodes[parent.entries[name]]
            if node.is_dir:
                raise FsError(errno.EISDIR, path)
        else:
            node = self._new_node(parent, name, stat.S_IFREG | (mode & 0o7777))
            self._link(parent, name, node)
        return self.open_node(node)

    def mkdir(self, path: str, mode: int) -> None:
        parent, name = self.parent_of(path)
        if name in parent.entries:
            raise FsError(errno.EEXIST, path)
        self._link(parent, name, self._new_node(parent, name, stat.S_IFDIR | (mode & 0o7777)))

    def unlink(self, path: str) -> None:
        parent, name = self.parent_of(path)
        node = self.resolve(path)
        if node.is_dir:
            raise FsError(errno.EISDIR, path)
        self._unlink(parent, name)

    def rmdir(self, path: str) -> None:
        parent, name = self.parent_of(path)
        node = self.resolve(path)
        if not node.is_dir:
            raise FsError(errno.ENOTDIR, path)
        if node.entries:
            raise FsError(errno.ENOTEMPTY, path)
        self._unlink(parent, name)

    def link(self, existing: str, new: str) -> None:
        node = self.resolve(existing)
        if node.is_dir:
            raise FsError(errno.EPERM, existing)
        parent, name = self.parent_of(new)
        if name in parent.entries:
            raise FsError(errno.EEXIST, new)
        self._link(parent, name, node)

    def rename(self, old: str, new: str, noreplace: bool = False) -> None:
        old_parent, old_name = self.parent_of(old)
        node = self.resolve(old)
        new_parent, new_name = self.parent_of(new)
        if (old_parent is new_parent and old_name == new_name) or node.ino == new_parent.entries.get(new_name):
            return
        if new_name in new_parent.entries:
            if noreplace:
                raise FsError(errno.EEXIST, new)
            target = self.nodes[new_parent.entries[new_name]]
            if target.is_dir != node.is_dir:
                raise FsError(errno.EISDIR if target.is_dir else errno.ENOTDIR, new)
            if target.is_dir and target.entries:
                raise FsError(errno.ENOTEMPTY, new)
        node.links += 1  # held while moved, so it is never freed in between
        self._unlink(old_parent, old_name)
        if new_name in new_parent.entries:
            self._unlink(new_parent, new_name)
        new_parent.entries[new_name] = node.ino
        new_parent.mtime_ns = time.time_ns()
        node.path = _join(new_parent.path, new_name)

    # ------------------------------------------------------------------ handles and data
    def open_node(self, node: Node) -> int:
        fh = self._next_fh
        self._next_fh += 1
        self.handles[fh] = node
        node.opens += 1
        return fh

    def release(self, fh: int) -> None:
        node = self.handles.pop(fh, None)  # a handle from before a cut is simply forgotten
        if node is not None:
            node.opens -= 1
            self._maybe_free(node)

    @staticmethod
    def read(node: Node, size: int, offset: int) -> bytes:
        return bytes(node.data[offset:offset + size])

    @staticmethod
    def write(node: Node, data: bytes, offset: int) -> int:
        buf = node.data
        if offset > len(buf):
            node.mark(len(buf), offset)
            buf.extend(bytes(offset - len(buf)))
        buf[offset:offset + len(data)] = data
        node.mark(offset, offset + len(data))
        node.mtime_ns = time.time_ns()
        return len(data)

    @staticmethod
    def truncate(node: Node, length: int) -> None:
        if node.is_dir:
            raise FsError(errno.EISDIR, node.path)
        old = len(node.data)
        if length < old:
            del node.data[length:]
        elif length > old:
            node.data.extend(bytes(length - old))
            node.mark(old, length)
        node.mtime_ns = time.time_ns()

    @staticmethod
    def allocate(node: Node, offset: int, length: int) -> None:
        """``fallocate`` without flags: the file grows to cover the range, with zeros."""
        end = offset + length
        if end > len(node.data):
            node.mark(len(node.data), end)
            node.data.extend(bytes(end - len(node.data)))

    @staticmethod
    def punch(node: Node, offset: int, length: int) -> None:
        end = min(offset + length, len(node.data))
        if end > offset:
            node.data[offset:end] = bytes(end - offset)
            node.mark(offset, end)

    # ------------------------------------------------------------------ durability
    def sync_file(self, node: Node) -> None:
        """fsync/fdatasync of a file: its bytes and size survive a cut (not its names)."""
        if node.is_dir:
            self.sync_dir(node)
            return
        durable, current = node.durable, node.data
        size = len(current)
        if len(durable) > size:
            del durable[size:]
        elif len(durable) < size:
            durable.extend(bytes(size - len(durable)))
        for start, end in node.dirty:
            end = min(end, size)
            if start < end:
                durable[start:end] = current[start:end]
        node.dirty.clear()

    def sync_dir(self, node: Node) -> None:
        """fsync of a directory: its entries, as they are now, survive a cut."""
        old, new = node.durable_entries, dict(node.entries)
        for name, ino in old.items():
            if new.get(name) != ino and ino in self.nodes:
                gone = self.nodes[ino]
                gone.durable_links -= 1
                self._maybe_free(gone)
        for name, ino in new.items():
            if old.get(name) != ino:
                self.nodes[ino].durable_links += 1
        node.durable_entries = new

    def sync_zone(self, zone: str) -> None:
        """Everything in ``zone`` durable (what a clean unmount leaves): for setting scenes up."""
        for node in [n for n in self.nodes.values() if n.zone == zone]:
            if node.is_dir:
                self.sync_dir(node)
            else:
                self.sync_file(node)

    def cut(self, zone: str, seed: int | None = None) -> CutReport:
        """Power cut in ``zone``: every change not made durable is lost or, with ``seed``, a random subset of the
        dirty pages survives (module docstring)."""
        report = CutReport()
        written_back = random.Random(seed) if seed is not None else None
        top_ino = self.nodes[ROOT_INO].durable_entries.get(zone)
        keep: set[int] = set()
        files: list[Node] = []
        if top_ino is not None:
            stack = [top_ino]
            while stack:
                ino = stack.pop()
                if ino in keep:
                    continue
                keep.add(ino)
                node = self.nodes[ino]
                if node.is_dir:
                    report.names_lost += [_join(node.path, n) for n, i in node.entries.items()
                                          if node.durable_entries.get(n) != i]
                    node.entries = dict(node.durable_entries)
                    stack.extend(node.entries.values())
                else:
                    files.append(node)
        for node in sorted(files, key=lambda n: n.ino):  # one order for a seed, whatever the walk's
            lost = sum(end - start for start, end in node.dirty) + max(0, len(node.durable) - len(node.data))
            if written_back is not None:
                lost -= _write_back_pages(node, written_back, report)
            if lost or len(node.data) != len(node.durable):
                report.files_reverted += 1
                report.bytes_lost += max(0, lost)
            node.data = bytearray(node.durable)
            node.dirty.clear()
        for ino, node in list(self.nodes.items()):
            if node.zone == zone and ino not in keep:
                del self.nodes[ino]
                report.inodes_dropped += 1
        for ino in keep:
            self.nodes[ino].links = self.nodes[ino].durable_links = 0
        for ino in keep:
            node = self.nodes[ino]
            for child in node.entries.values():
                self.nodes[child].links += 1
                self.nodes[child].durable_links += 1
        if top_ino is not None:
            self.nodes[top_ino].links = self.nodes[top_ino].durable_links = 1
        for fh, node in list(self.handles.items()):
            if node.zone == zone:
                del self.handles[fh]
        for node in self.nodes.values():
            if node.zone == zone:
                node.opens = 0
        return report

    # ------------------------------------------------------------------ attributes
    def attributes(self, node: Node) -> dict[str, int]:
        size = len(node.data) if not node.is_dir else 4096
        nlink = node.links + sum(1 for i in node.entries.values() if self.nodes[i].is_dir) + 1 if node.is_dir \
            else node.links
        return {"st_mode": node.mode, "st_ino": node.ino, "st_nlink": max(nlink, 1), "st_size": size,
                "st_blocks": (size + 511) // 512, "st_blksize": 4096, "st_uid": 0, "st_gid": 0,
                "st_atime": node.mtime_ns, "st_mtime": node.mtime_ns, "st_ctime": node.mtime_ns}

    def used_bytes(self) -> int:
        return sum(len(n.data) for n in self.nodes.values())


def _dirty_pages(node: Node) -> list[int]:
    pages: set[int] = set()
    for start, end in node.dirty:
        pages.update(range(start // PAGE, -(-end // PAGE)))
    return sorted(pages)


def _write_back_pages(node: Node, rnd: random.Random, report: CutReport) -> int:
    """Copy each dirty page of ``node`` that the disk wrote back (probability 1/2) into its durable bytes, the
    file extended (zeros in a gap) when the page lies past them; returns the dirty bytes so kept."""
    kept = 0
    for page in _dirty_pages(node):
        if rnd.random() >= 0.5:
            continue
        start, end = page * PAGE, min((page + 1) * PAGE, len(node.data))
        if start >= end:
            continue  # the page lies past the current end (a truncate): nothing to write back
        if len(node.durable) < start:
            node.durable.extend(bytes(start - len(node.durable)))
        node.durable[start:end] = node.data[start:end]
        report.pages_kept += 1
        kept += sum(max(0, min(e, end) - max(s, start)) for s, e in node.dirty)
    return kept


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"
