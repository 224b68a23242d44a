"""What garbage collection needs from the storage engine, and nothing else (BookKeeper's GC thread sees the
entry logger and the ledger storage through interfaces only).

Blocking methods are called from GC's threads, never the event loop; index updates go through the
checkpoint thread so they are ordered with checkpoints and ledger deletions. Compaction output logs and
their ``.compacting``/``.compacted`` names belong to storage (``compaction_log``): GC asks for a new one,
writes it, and walks it through its commit steps.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bookie.storage import compaction_log
from bookie.storage.compaction_log import CompactionLog
from bookie.storage.ledger_dir import LedgerDirStorage


@dataclass(frozen=True)
class DirPaths:
    """Where one ledger directory keeps its files."""

    ledger_dir: Path
    current: Path          # entry logs, lastId, lastMark, GC metadata
    locations_index: str   # the RocksDB locations index (entry_location_compact names it)


class GcStorageApi:
    """Mixed into ``StorageEngine``: its GC-facing methods (see the module docstring). GC depends on this
    class only, never on the engine itself."""

    dirs: list[LedgerDirStorage]
    _flush_pool: ThreadPoolExecutor

    # --- ledgers (implemented by the engine's read and delete paths)
    def ledger_ids(self) -> list[int]:
        """Ledgers stored here."""
        raise NotImplementedError

    def has_ledger(self, ledger_id: int) -> bool:
        """Whether a ledger is still stored here (thread-safe: one dict look-up)."""
        raise NotImplementedError

    async def delete_ledger(self, ledger_id: int) -> None:
        """Forget a ledger: its bytes in entry logs become garbage for GC."""
        raise NotImplementedError

    # --- directories and entry logs
    def dir_count(self) -> int:
        return len(self.dirs)

    def gc_dir_paths(self, dir_index: int) -> DirPaths:
        d = self.dirs[dir_index]
        return DirPaths(d.ledger_dir, d.current, str(d.locations.db.path()))

    def gc_log_path(self, dir_index: int, log_id: int) -> Path:
        return self.dirs[dir_index].entry_logger.path_of(log_id)

    def gc_location(self, dir_index: int, ledger_id: int, entry_id: int) -> int | None:
        """Where the index says an entry is now (compaction copies only what the index points at). Blocking."""
        return self.dirs[dir_index].locations.get(ledger_id, entry_id)

    def gc_new_compaction_log(self, dir_index: int, old_log_id: int) -> CompactionLog:
        """A new ``.compacting`` output log for compacting ``old_log_id``, with an id the engine never reuses."""
        return CompactionLog.create(self.dirs[dir_index].current, self.gc_allocate_log_id(dir_index), old_log_id)

    def gc_incomplete_compactions(self, dir_index: int) -> tuple[list[CompactionLog], list[str]]:
        """Committed compactions a crash interrupted (to finish), and the uncommitted leftovers removed."""
        return compaction_log.incomplete(self.dirs[dir_index].current)

    def gc_flushed_logs(self, dir_index: int) -> tuple[list[int], int]:
        """(ids of the directory's entry logs, id of the active log) as one consistent snapshot.

        Taken on the checkpoint thread, between checkpoints: a log that a running checkpoint rolled past is
        complete but its entries are indexed only when that checkpoint ends, so GC must not see it before.
        And under the entry logger's lock: a log being created must never look like a finished empty one.
        """
        return self._flush_pool.submit(self.dirs[dir_index].entry_logger.snapshot_ids).result()

    def gc_active_log_ledgers(self, dir_index: int) -> dict[int, int]:
        """Bytes per ledger appended to the directory's active log so far (its ledgers map to be)."""
        return self.dirs[dir_index].entry_logger.active_ledgers()

    def gc_allocate_log_id(self, dir_index: int) -> int:
        """A fresh entry-log id for a compaction output, recorded in ``lastId`` so the engine never reuses it."""
        return self.dirs[dir_index].entry_logger.reserve_log_id()

    def gc_append(self, dir_index: int, ledger_id: int, entry_id: int, body: bytes) -> int:
        """Append a copy of an entry to the directory's current entry log, next to checkpointed entries; returns
        its location. Non-transactional compaction (BookKeeper's ``EntryLogCompactor`` calls
        ``entryLogger.addEntry``): neither write cache nor journal, the entry is already durable in its old
        log. Not durable before ``gc_flush_log``, not read before ``gc_relocate`` points the index at it.
        Blocking (the entry logger's lock, a write when its buffer is full); called from the GC thread."""
        return self.dirs[dir_index].entry_logger.append(ledger_id, entry_id, body)

    def gc_flush_log(self, dir_index: int) -> None:
        """Write and fsync what ``gc_append`` buffered (and any checkpoint appends sharing the buffer). A log
        that rolled meanwhile was fsynced when it was finalized. Blocking."""
        self.dirs[dir_index].entry_logger.flush()

    def gc_relocate(self, dir_index: int, moves: list[tuple[int, int, int, int]]) -> int:
        """Point compacted entries at their new location where still unchanged, durably, on the checkpoint
        thread; returns how many moved. Blocks the calling (GC) thread, never the event loop."""
        directory = self.dirs[dir_index]
        locations = directory.locations

        def apply() -> int:
            moved = locations.replace_if_unchanged(moves)
            locations.sync()
            directory.settle_names()  # the index's sequence file durable before GC deletes the old log
            return moved

        return self._flush_pool.submit(apply).result()

    def gc_delete_log(self, dir_index: int, log_id: int) -> int:
        """Unlink an entry log; returns its size. Blocking. The engine's cached reader stays open so a read
        that found the old location just before compaction moved the index still completes: GC closes it
        with ``gc_close_reader`` a moment later (the space is freed then)."""
        logger = self.dirs[dir_index].entry_logger
        if log_id == logger.active_log_id:
            raise ValueError(f"entry log {log_id:x} is the active log")
        path = logger.path_of(log_id)
        size = path.stat().st_size
        path.unlink()
        return size

    def gc_close_reader(self, dir_index: int, log_id: int) -> None:
        self.dirs[dir_index].entry_logger.forget_reader(log_id)

    def gc_compact_locations(self, dir_index: int) -> str:
        """RocksDB compaction of the directory's locations index (tombstones of deleted ledgers, BookKeeper
        PR #3802); returns its path. Blocking, safe alongside writes."""
        db = self.dirs[dir_index].locations.db
        db.compact_range(None, None)
        return str(db.path())
