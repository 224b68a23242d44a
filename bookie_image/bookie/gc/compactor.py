"""Compaction of one entry log, in BookKeeper's two modes, and recovery of compactions a crash interrupted.

Both modes copy only the live entries **the index points at** (a superseded copy, e.g. left by a journal
replay, is never resurrected), point the index at the copies only where it still points at the old
location (an entry deleted or rewritten meanwhile keeps its newer state), and retire the old log last.

Transactional (``useTransactionalCompaction=true``, our default; BookKeeper's
``TransactionalEntryLogCompactor`` and its file names, which storage owns: ``bookie.storage.compaction_log``):

1. live entries are copied to ``<new>.log.compacting`` (a complete log: header, records, ledgers map),
   fsynced;
2. it is hard-linked as ``<new>.log.<old>.compacted`` (the commit point: the copy is complete) and the
   ``.compacting`` name removed;
3. it is hard-linked as ``<new>.log`` (readable by the engine) and the index is pointed at the new
   locations;
4. the old log is retired (deleted once no reader holds it) and the ``.compacted`` name removed.

A crash before 2 leaves a ``.compacting`` file: deleted at recovery, the index never saw it. A crash after
2 leaves the ``.compacted`` name: recovery redoes 3 and 4 (idempotent). Every live entry ends up stored in
exactly one log. Recovery runs in both modes: a bookie switched to non-transactional still finishes them.

Non-transactional (``useTransactionalCompaction=false``, BookKeeper's default, its ``EntryLogCompactor``): live
entries are appended to the directory's *current* entry log through the engine's entry logger (the log
checkpoints write to); every ``compactionMaxOutstandingRequests`` entries and at the end, that log is fsynced
and then the index is pointed at the copies; the old log is retired once all are. See
``Compactor._compact_into_current_log`` for why a crash at any point loses no entry.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bookie import failpoints
from bookie.gc.metacache import MetaCache
from bookie.gc.refs import LogRefs
from bookie.gc.throttle import Throttle
from bookie.storage import entrylog_format as ef
from bookie.storage.compaction_log import CompactionLog
from bookie.storage.logmeta import LogMeta, iter_log_records

log = logging.getLogger(__name__)



Move = tuple[int, int, int, int]  # (ledger id, entry id, old location, new location)


class Engine(Protocol):
    """What compaction needs of the storage engine (``bookie.storage.gc_api``)."""

    def gc_log_path(self, dir_index: int, log_id: int) -> Path: ...
    def gc_location(self, dir_index: int, ledger_id: int, entry_id: int) -> int | None: ...
    def gc_new_compaction_log(self, dir_index: int, old_log_id: int) -> CompactionLog: ...
    def gc_incomplete_compactions(self, dir_index: int) -> tuple[list[CompactionLog], list[str]]: ...
    def gc_append(self, dir_index: int, ledger_id: int, entry_id: int, body: bytes) -> int: ...
    def gc_flush_log(self, dir_index: int) -> None: ...
    def gc_relocate(self, dir_index: int, moves: list[Move]) -> int: ...


@dataclass
class Limits:
    """Throttles of one compaction run: writes by entries or bytes, reads by bytes; stop aborts."""

    write: Throttle
    write_by_bytes: bool
    read: Throttle
    batch: int
    stop: threading.Event = field(default_factory=threading.Event)


class Aborted(Exception):
    """The bookie is stopping. The old log is kept; a transactional run removed its half-written
    ``.compacting`` file, a non-transactional one indexed the copies it had made (``_salvage``)."""


class Unindexed(Exception):
    """A live ledger's entry has no index location: the checkpoint that wrote it did not finish (the journal
    still holds it and restart replays it). Its log may hold the only copy on disk: it is left alone."""


@dataclass
class Compacted:
    old_id: int
    new_meta: LogMeta | None   # the transactional output log; None: nothing copied, or copied to the current log
    entries: int               # live entries copied
    moved: int                 # index entries pointed at the copies
    copied_bytes: int          # bytes the copies take (entries and size prefixes)
    into: str                  # where the copies went, for the log line


class Compactor:
    """Compaction for one ledger directory (runs in the GC thread)."""

    def __init__(self, dir_index: int, engine: Engine, refs: LogRefs, cache: MetaCache, *,
                 transactional: bool = True) -> None:
        self.dir_index = dir_index
        self.transactional = transactional
        self.engine = engine
        self.refs = refs
        self.cache = cache

    def path_of(self, log_id: int) -> Path:
        return self.engine.gc_log_path(self.dir_index, log_id)

    def compact(self, meta: LogMeta, alive: Callable[[int], bool], limits: Limits) -> Compacted:
        """Copy the live, indexed entries of ``meta``'s log elsewhere, point the index at them, retire the log."""
        if self.transactional:
            return self._compact_to_new_log(meta, alive, limits)
        return self._compact_into_current_log(meta, alive, limits)

    def _compact_to_new_log(self, meta: LogMeta, alive: Callable[[int], bool], limits: Limits) -> Compacted:
        """Transactional: a ``.compacting`` file, committed by its ``.compacted`` name (module docstring)."""
        out = self.engine.gc_new_compaction_log(self.dir_index, meta.log_id)
        try:
            with closing(self._live_records(meta, alive, limits)) as records:
                moves = [(rec.ledger_id, rec.entry_id, old, out.append(rec)) for rec, old in records]
            size = out.finish() if moves else 0
        except BaseException:
            out.abort()
            raise
        if not moves:
            out.abort()
            self._retire(meta.log_id)
            return Compacted(meta.log_id, None, 0, 0, 0, "nothing")
        failpoints.hit("gc.compaction.before-commit")
        out.mark_compacted()
        out.make_available()
        failpoints.hit("gc.compaction.after-commit")
        moved = self._relocate(moves, limits.batch)
        failpoints.hit("gc.compaction.after-relocate")
        self._retire(meta.log_id)
        out.finalize_and_cleanup()
        st = os.stat(out.path)
        copied = sum(out.ledgers.values())
        new_meta = LogMeta(out.new_id, copied, dict(out.ledgers), size, st.st_mtime,
                           first_ledgers=len(out.ledgers))
        return Compacted(meta.log_id, new_meta, len(moves), moved, copied, f"{out.new_id:x}.log")

    def _compact_into_current_log(self, meta: LogMeta, alive: Callable[[int], bool], limits: Limits) -> Compacted:
        """Non-transactional (BookKeeper's ``EntryLogCompactor``): copies go to the current entry log.

        Per batch of ``compactionMaxOutstandingRequests`` copies: append them through the engine's entry
        logger, fsync that log, *then* point the index at them; the old log is retired only after the last
        batch. Why a SIGKILL or a power cut anywhere loses no live entry and makes none readable twice:

        * before the index update of a batch (copied, flushed or not): the index still points at the old
          log, which still exists, so every entry reads from there. The copies are referenced by nothing:
          reads go through the index only (read-ahead caches only records at indexed locations: after a
          power cut a copy may be torn) and compaction copies only indexed entries. They are garbage,
          counted under their ledger in their log's map (or scan, for the log the crash left unfinalized),
          reclaimed when that log is compacted or the ledger deleted. GC's accounting of the old log did
          not change, so a later cycle compacts it again, skipping entries already moved.
        * after an index update: it went to RocksDB's WAL and was synced (``gc_relocate``) only after the
          copies were fsynced, so every location the index holds is on disk. Entries of later batches still
          point at the old log, which still exists.
        * after the last update, before the old log is retired: no index entry points at it any more; the
          next compaction of it finds nothing indexed to copy and retires it.

        The index moves only where it still holds the old location (``replace_if_unchanged``), so a checkpoint
        or ledger deletion racing with the compaction always wins. Unlike the transactional mode, a crash can
        leave duplicates on disk (BookKeeper #571): unread, and reclaimed as above.
        """
        batch: list[Move] = []
        entries = moved = copied = 0

        def index_batch() -> None:
            nonlocal moved
            failpoints.hit("gc.compaction.before-flush")
            self.engine.gc_flush_log(self.dir_index)
            failpoints.hit("gc.compaction.before-relocate")
            moved += self.engine.gc_relocate(self.dir_index, batch)
            batch.clear()

        try:
            with closing(self._live_records(meta, alive, limits)) as records:
                for rec, old in records:
                    new = self.engine.gc_append(self.dir_index, rec.ledger_id, rec.entry_id, bytes(rec.data))
                    batch.append((rec.ledger_id, rec.entry_id, old, new))
                    entries += 1
                    copied += ef.RECORD_SIZE_PREFIX + rec.size
                    if len(batch) >= max(1, limits.batch):
                        index_batch()
            if batch:
                index_batch()
        except BaseException:
            self._salvage(batch)
            raise
        failpoints.hit("gc.compaction.after-relocate")
        self._retire(meta.log_id)
        into = "the current entry log" if entries else "nothing"
        return Compacted(meta.log_id, None, entries, moved, copied, into)

    def _salvage(self, batch: list[Move]) -> None:
        """A non-transactional compaction stopped half-way (GC stopping, an unindexed entry, a corrupt record,
        an I/O error): the copies made so far were the indexed versions, so they are flushed and indexed
        instead of left as garbage that every retry of this log would add to. If that fails too they are
        garbage, which is safe (see ``_compact_into_current_log``). The old log is kept either way."""
        if not batch:
            return
        try:
            self.engine.gc_flush_log(self.dir_index)
            self.engine.gc_relocate(self.dir_index, batch)
        except Exception as exc:
            log.warning("compaction stopped: %d copies left unindexed (garbage for a later GC): %r",
                        len(batch), exc)

    def _live_records(self, meta: LogMeta, alive: Callable[[int], bool],
                      limits: Limits) -> Generator[tuple[ef.Record, int]]:
        """(record, its location) of every entry of the log that must be copied, write-throttled."""
        fd = os.open(self.path_of(meta.log_id), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            for offset, rec in iter_log_records(fd, size, limits.read):
                if limits.stop.is_set():
                    raise Aborted(f"compaction of {meta.log_id:x}.log aborted: GC stopping")
                if rec.ledger_id not in meta.ledgers or not alive(rec.ledger_id):
                    continue
                old = ef.make_location(meta.log_id, offset + ef.RECORD_SIZE_PREFIX)
                current = self.engine.gc_location(self.dir_index, rec.ledger_id, rec.entry_id)
                if current is None:
                    raise Unindexed(f"ledger {rec.ledger_id} entry {rec.entry_id} in {meta.log_id:x}.log is "
                                    "not in the index")
                if current != old:
                    continue  # superseded by a newer copy: never resurrect a stale one
                limits.write.acquire(rec.size + ef.RECORD_SIZE_PREFIX if limits.write_by_bytes else 1)
                yield rec, old
        finally:
            os.close(fd)

    def _relocate(self, moves: list[Move], batch: int) -> int:
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
        committed, removed = self.engine.gc_incomplete_compactions(self.dir_index)
        done = []
        for out in committed:
            moved = self._finish(out)
            done.append(f"finished compaction of {out.old_id:x}.log into {out.new_id:x}.log ({moved} entries moved)")
        return done + [f"removed interrupted {name}" for name in removed]

    def _finish(self, out: CompactionLog) -> int:
        """Steps 3 and 4 again: the new log readable, the index pointed at it where it still names the old log."""
        out.make_available()
        moves = []
        for new, rec in out.records():
            current = self.engine.gc_location(self.dir_index, rec.ledger_id, rec.entry_id)
            if current is not None and ef.split_location(current)[0] == out.old_id:
                moves.append((rec.ledger_id, rec.entry_id, current, new))
        moved = self._relocate(moves, 100000)
        if self.path_of(out.old_id).exists():
            self._retire(out.old_id)
        out.finalize_and_cleanup()
        return moved
