"""Transactional compaction of one entry log, and recovery of compactions a crash interrupted.

Files (BookKeeper's TransactionalEntryLogCompactor names, reference section 5.3):

1. live entries are copied to ``<new>.log.compacting`` (a complete log: header, records, ledgers map),
   fsynced;
2. it is hard-linked as ``<new>.log.<old>.compacted`` (the commit point: the copy is complete) and the
   ``.compacting`` name removed;
3. it is hard-linked as ``<new>.log`` (readable by the engine) and the index is pointed at the new
   locations, only where it still points at the old ones (an entry deleted or rewritten meanwhile keeps
   its newer state);
4. the old log is retired (deleted once no reader holds it) and the ``.compacted`` name removed.

A crash before 2 leaves a ``.compacting`` file: deleted at recovery, the index never saw it. A crash after
2 leaves the ``.compacted`` name: recovery redoes 3 and 4 (idempotent). Entries are copied only when the
index points at them, so a superseded copy (journal replay after a crash) is never resurrected, and every
live entry ends up in exactly one log.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bookie.gc.logmeta import LogMeta, MetaCache, iter_log_records
from bookie.gc.refs import LogRefs
from bookie.gc.throttle import Throttle
from bookie.storage import entrylog_format as ef

log = logging.getLogger(__name__)

COMPACTING = ".compacting"
COMPACTED = ".compacted"
WRITE_CHUNK = 1024 * 1024
CRASH_ENV = "BOOKIE_GC_TEST_CRASH_AT"  # fault injection for tests: SIGKILL ourselves at a named step


class Engine(Protocol):
    """The storage engine's GC hooks (``StorageEngine``'s "GC hooks" section)."""

    def gc_allocate_log_id(self, dir_index: int) -> int: ...
    def gc_relocate(self, dir_index: int, moves: list[tuple[int, int, int, int]]) -> int: ...
    def gc_delete_log(self, dir_index: int, log_id: int) -> int: ...
    def gc_close_reader(self, dir_index: int, log_id: int) -> None: ...
    def gc_compact_locations(self, dir_index: int) -> str: ...


class Locations(Protocol):
    def get(self, ledger_id: int, entry_id: int) -> int | None: ...


@dataclass
class Limits:
    """Throttles of one compaction run: writes by entries or bytes, reads by bytes; stop aborts."""

    write: Throttle
    write_by_bytes: bool
    read: Throttle
    batch: int
    stop: threading.Event = field(default_factory=threading.Event)


class Aborted(Exception):
    """The bookie is stopping: the half-written ``.compacting`` file was removed, nothing else changed."""


class Unindexed(Exception):
    """A live ledger's entry has no index location: the checkpoint that wrote it did not finish (the journal
    still holds it and restart replays it). Its log may hold the only copy on disk: it is left alone."""


@dataclass
class Compacted:
    old_id: int
    new_meta: LogMeta | None   # None: nothing live was left to copy
    entries: int
    moved: int


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        log.warning("fault injection: SIGKILL at %s", step)
        os.kill(os.getpid(), signal.SIGKILL)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _LogWriter:
    """A compaction output log, written with the engine's format and finalized with its ledgers map."""

    def __init__(self, path: Path, log_id: int) -> None:
        self.path = path
        self.log_id = log_id
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.pwrite(self.fd, ef.LogHeader().encode(), 0)
        self.position = self.flushed = ef.HEADER_SIZE
        self.buffer = bytearray()
        self.ledgers: dict[int, int] = {}

    def append(self, rec: ef.Record) -> int:
        location = ef.make_location(self.log_id, self.position + ef.RECORD_SIZE_PREFIX)
        self.buffer += rec.size.to_bytes(4, "big")
        self.buffer += rec.data
        record_size = ef.RECORD_SIZE_PREFIX + rec.size
        self.position += record_size
        self.ledgers[rec.ledger_id] = self.ledgers.get(rec.ledger_id, 0) + record_size
        if len(self.buffer) >= WRITE_CHUNK:
            self._write()
        return location

    def _write(self) -> None:
        os.pwrite(self.fd, self.buffer, self.flushed)
        self.flushed += len(self.buffer)
        self.buffer.clear()

    def finish(self) -> int:
        """Append the ledgers map, point the header at it, fsync; returns the file size."""
        self._write()
        data = ef.encode_ledgers_map(self.ledgers)
        os.pwrite(self.fd, data, self.position)
        os.pwrite(self.fd, ef.encode_map_location(self.position, len(self.ledgers)), ef.MAP_LOCATION_OFFSET)
        os.fsync(self.fd)
        return self.position + len(data)

    def close(self) -> None:
        os.close(self.fd)


class Compactor:
    """Compaction for one ledger directory (runs in the GC thread)."""

    def __init__(self, dir_index: int, current: Path, engine: Engine, locations: Locations, refs: LogRefs,
                 cache: MetaCache) -> None:
        self.dir_index = dir_index
        self.current = current
        self.engine = engine
        self.locations = locations
        self.refs = refs
        self.cache = cache

    def path_of(self, log_id: int) -> Path:
        return self.current / ef.log_file_name(log_id)

    def compact(self, meta: LogMeta, alive: Callable[[int], bool], limits: Limits) -> Compacted:
        """Copy the live, indexed entries of ``meta``'s log to a new log and retire the old one."""
        new_id = self.engine.gc_allocate_log_id(self.dir_index)
        compacting = self.current / f"{ef.log_file_name(new_id)}{COMPACTING}"
        writer = _LogWriter(compacting, new_id)
        try:
            moves = self._copy(meta, alive, writer, limits)
            size = writer.finish() if moves else 0
        except BaseException:
            writer.close()
            compacting.unlink(missing_ok=True)
            raise
        writer.close()
        if not moves:
            compacting.unlink()
            self._retire(meta.log_id)
            return Compacted(meta.log_id, None, 0, 0)
        crash_point("before-commit")
        marker = self._commit(compacting, new_id, meta.log_id)
        crash_point("after-commit")
        moved = self._relocate(moves, limits.batch)
        crash_point("after-relocate")
        self._retire(meta.log_id)
        marker.unlink()
        fsync_dir(self.current)
        st = os.stat(self.path_of(new_id))
        new_meta = LogMeta(new_id, sum(writer.ledgers.values()), dict(writer.ledgers), size, st.st_mtime,
                           first_ledgers=len(writer.ledgers))
        return Compacted(meta.log_id, new_meta, len(moves), moved)

    def _copy(self, meta: LogMeta, alive: Callable[[int], bool], writer: _LogWriter,
              limits: Limits) -> list[tuple[int, int, int, int]]:
        moves: list[tuple[int, int, int, int]] = []
        fd = os.open(self.path_of(meta.log_id), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            for offset, rec in iter_log_records(fd, size, limits.read):
                if limits.stop.is_set():
                    raise Aborted(f"compaction of {meta.log_id:x}.log aborted: GC stopping")
                if rec.ledger_id not in meta.ledgers or not alive(rec.ledger_id):
                    continue
                old = ef.make_location(meta.log_id, offset + ef.RECORD_SIZE_PREFIX)
                current = self.locations.get(rec.ledger_id, rec.entry_id)
                if current is None:
                    raise Unindexed(f"ledger {rec.ledger_id} entry {rec.entry_id} in {meta.log_id:x}.log is "
                                    "not in the index")
                if current != old:
                    continue  # superseded by a newer copy: never resurrect a stale one
                limits.write.acquire(rec.size + ef.RECORD_SIZE_PREFIX if limits.write_by_bytes else 1)
                moves.append((rec.ledger_id, rec.entry_id, old, writer.append(rec)))
        finally:
            os.close(fd)
        return moves

    def _commit(self, compacting: Path, new_id: int, old_id: int) -> Path:
        """Steps 2 and 3: the ``.compacted`` name is the commit point, then the log becomes readable."""
        marker = self.current / f"{ef.log_file_name(new_id)}.{old_id:x}{COMPACTED}"
        os.link(compacting, marker)
        compacting.unlink()
        fsync_dir(self.current)
        os.link(marker, self.path_of(new_id))
        fsync_dir(self.current)
        return marker

    def _relocate(self, moves: list[tuple[int, int, int, int]], batch: int) -> int:
        moved = 0
        for i in range(0, len(moves), max(1, batch)):
            moved += self.engine.gc_relocate(self.dir_index, moves[i:i + batch])
        return moved

    def _retire(self, old_id: int) -> None:
        """Retire the old log and persist that before its ``.compacted`` name goes: once the marker is gone,
        only the cache remembers that this log's entries live elsewhere now."""
        self.refs.retire(old_id, self.path_of(old_id))
        meta = self.cache.logs.get(old_id)
        if meta is None:
            st = self.path_of(old_id).stat()
            meta = LogMeta(old_id, 0, {}, st.st_size, st.st_mtime)
        meta.pending_delete = True
        meta.ledgers.clear()
        self.cache.put(meta)
        self.cache.save()

    # ------------------------------------------------------------------ recovery
    def recover(self) -> list[str]:
        """Finish committed compactions, drop uncommitted ones (``cleanUpAndRecover``); returns what it did."""
        done = []
        for marker in sorted(self.current.glob(f"*{COMPACTED}")):
            parsed = parse_compacted(marker.name)
            if parsed is None:
                continue
            new_id, old_id = parsed
            moved = self._finish(marker, new_id, old_id)
            done.append(f"finished compaction of {old_id:x}.log into {new_id:x}.log ({moved} entries moved)")
        for leftover in sorted(self.current.glob(f"*{COMPACTING}")):
            leftover.unlink()
            done.append(f"removed interrupted {leftover.name}")
        if done:
            fsync_dir(self.current)
        return done

    def _finish(self, marker: Path, new_id: int, old_id: int) -> int:
        target = self.path_of(new_id)
        if not target.exists():
            os.link(marker, target)
            fsync_dir(self.current)
        moves = []
        fd = os.open(target, os.O_RDONLY)
        try:
            for offset, rec in iter_log_records(fd, os.fstat(fd).st_size):
                current = self.locations.get(rec.ledger_id, rec.entry_id)
                if current is not None and ef.split_location(current)[0] == old_id:
                    new = ef.make_location(new_id, offset + ef.RECORD_SIZE_PREFIX)
                    moves.append((rec.ledger_id, rec.entry_id, current, new))
        finally:
            os.close(fd)
        moved = self._relocate(moves, 100000)
        if self.path_of(old_id).exists():
            self._retire(old_id)
        marker.unlink()
        return moved


def parse_compacted(name: str) -> tuple[int, int] | None:
    """``<new>.log.<old>.compacted`` -> (new, old)."""
    parts = name.split(".")
    if len(parts) != 4 or parts[1] != "log" or parts[3] != COMPACTED[1:]:
        return None
    try:
        return int(parts[0], 16), int(parts[2], 16)
    except ValueError:
        return None
