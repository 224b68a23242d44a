"""One ledger directory of the storage engine: its entry logs, its two indexes and its caches.

``LedgerState`` (BookKeeper's ``TransientLedgerInfo`` with the ledger's ``LedgerData``: LAC, parked long polls)
and ``WriteCache`` are C types of ``_write_path``, the request hot path's; they are imported from here.
"""

from __future__ import annotations

import time
from pathlib import Path

from bookie.config import BookieConfig
from bookie.stats import FlushStats, op_stat
from bookie.storage import durable
from bookie.storage._write_path import LedgerState, WriteCache
from bookie.storage.caches import ReadCache
from bookie.storage.entrylog import LOCATION_RECORD_SIZE, EntryLogger
from bookie.storage.errors import NoEntryError
from bookie.storage.index import LedgerIndex, LocationIndex

__all__ = ["LedgerDirStorage", "LedgerState", "WriteCache"]


class LedgerDirStorage:
    """One ledger directory: its entry logs, indexes and caches (``SingleDirectoryDbLedgerStorage``)."""

    def __init__(self, ledger_dir: Path, index_dir: Path, conf: BookieConfig, n_dirs: int) -> None:
        self.ledger_dir = ledger_dir
        self.index_dir = index_dir
        self.current = ledger_dir / "current"
        self.index_current = index_dir / "current"
        self.entry_logger = EntryLogger(self.current, conf.log_size_limit)
        self.ledger_index = LedgerIndex(self.index_current)
        self.locations = LocationIndex(self.index_current)
        half = max(1, conf.db_storage_write_cache_max_size_mb * 1024 * 1024 // n_dirs // 2)
        self.write_cache = WriteCache(half)
        self.flushing: WriteCache | None = None
        # The swapped cache whose entries are in the entry log, durably, but not yet in the index (its flush failed
        # after the append: the index's disk full), with their locations: the retry indexes them, and does not
        # append a second copy of each entry to a disk that is full.
        self._appended: tuple[WriteCache, bytearray] | None = None
        self._flushing_changes = 0  # counts forget_appended: a change during an append keeps it from being reused
        # Free space as last measured by the disk checker, less what checkpoints wrote since (None: not yet
        # measured): the add path checks it instead of a statvfs per add.
        self.free_bytes: int | None = None
        self.total_bytes = 0
        self.read_cache = ReadCache(conf.db_storage_read_ahead_cache_max_size_mb * 1024 * 1024 // n_dirs)
        self.read_ahead_entries = conf.db_storage_read_ahead_cache_batch_size
        # BookKeeper's bookie_read_entry and bookie_readahead_batch_{count,size} (bookie.metrics).
        self.read_entry_stat, self.readahead_count_stat, self.readahead_size_stat = (
            op_stat(conf.enable_statistics) for _ in range(3))
        self.flush_stats = FlushStats(conf.enable_statistics)
        # -1: no byte limit of its own; the entry count and half the read cache (which holds the batch) bound it.
        bytes_limit = conf.db_storage_read_ahead_cache_batch_bytes_size
        self.read_ahead_bytes = bytes_limit if bytes_limit > 0 else self.read_cache.max_bytes // 2

    # --- blocking parts (worker threads)
    def flush_cache(self, cache: WriteCache) -> int:
        """Append a swapped write cache to the entry log and index it; returns entries written. Timed whole and
        by step (``flush_stats``): a slow ledger device shows there. A retry of a flush that failed after its
        append (``_appended``) only indexes."""
        stats, started = self.flush_stats, time.perf_counter()
        batch = None
        try:
            if self._appended is not None and self._appended[0] is cache:
                locations = self._appended[1]
            else:
                changes = self._flushing_changes
                batch = cache.sorted_entries()
                step = time.perf_counter()
                locations = self.entry_logger.append_durably(batch)
                stats.entry_log.record_since(step)
                if changes == self._flushing_changes:
                    self._appended = (cache, locations)
            step = time.perf_counter()
            self.locations.put_packed(locations)
            self.locations.sync()
            stats.locations_index.record_since(step)
            step = time.perf_counter()
            self.ledger_index.sync()
            stats.ledger_index.record_since(step)
        except BaseException:
            stats.whole.record_since(started, success=False)
            raise
        self._appended = None
        stats.whole.record_since(started)
        stats.size.record(cache.size)
        if batch is not None:
            batch.release()  # here, with yields, rather than wherever its last reference goes
        return len(locations) // LOCATION_RECORD_SIZE

    def forget_appended(self) -> None:
        """The swapped cache changed (a ledger deleted from it, on the event loop, maybe while a worker thread
        appends it): its next flush appends what it holds then."""
        self._flushing_changes += 1
        self._appended = None

    def settle_names(self) -> None:
        """Make durable the names staged in this directory's ``current/`` (the journal marks) and in its index
        directory's (the indexes' sequence files): one fsync of each, however many names it holds; the two are
        one directory unless the indexes have a directory of their own (``indexDirectories``)."""
        directories = {self.current}
        if self.locations.sequence_staged or self.ledger_index.sequence_staged:
            directories.add(self.index_current)
        for directory in directories:
            durable.fsync_dir(directory)
        self.locations.sequence_staged = self.ledger_index.sequence_staged = False

    def read_from_disk(self, ledger_id: int, entry_id: int) -> bytes:
        location = self.locations.get(ledger_id, entry_id)
        if location is None:
            raise NoEntryError(ledger_id, entry_id)
        body = self.entry_logger.read(ledger_id, entry_id, location)
        entries, nbytes = 1, len(body)
        if self.read_ahead_entries > 1 and self.read_cache.max_bytes > 0:
            budget = min(self.read_ahead_bytes, self.read_cache.max_bytes // 2)
            try:
                for next_id, next_location, next_body in self.entry_logger.read_ahead(
                        ledger_id, location, self.read_ahead_entries - 1, budget):
                    # Only the copy the index names: a log can also hold records nothing points at (a compaction
                    # copy or a checkpoint's entry the power cut short, torn when only some of its pages reached
                    # the disk; a copy a later compaction superseded). Cached, such a record would be served.
                    if self.locations.get(ledger_id, next_id) != next_location:
                        break
                    self.read_cache.put(ledger_id, next_id, next_body)
                    entries, nbytes = entries + 1, nbytes + len(next_body)
            except OSError:
                # The entry asked for was read whole; the read-ahead only fills the cache. An entry it could not
                # read fails (and is logged) when a client asks for it, not this read.
                pass
        self.readahead_count_stat.record(entries)
        self.readahead_size_stat.record(nbytes)
        return body

    def pending_bytes(self) -> int:
        """Entry bytes not in an entry log yet: they will take disk space at the next checkpoint."""
        return self.write_cache.size + (self.flushing.size if self.flushing is not None else 0)

    def last_entry_on_disk(self, ledger_id: int) -> int | None:
        return self.locations.last_entry(ledger_id)

    def close(self) -> None:
        self.entry_logger.close()
        self.locations.close()
        self.ledger_index.close()
