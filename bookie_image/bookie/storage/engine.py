"""The storage engine: what the bookie does with entries, without knowing where they came from.

Write path: an add goes to the write cache of its ledger directory, then to the journal; it is acknowledged
when the journal record is durable. A checkpoint (every ``flushInterval``, or when a write cache half is
full) swaps the cache, appends its entries sorted by ledger to the directory's entry log, indexes their
locations in RocksDB, fsyncs, and then records the journal mark (``lastMark``) up to which the journal is no
longer needed. A crash between checkpoints is repaired at start by replaying the journal from that mark.

Read path: write cache -> cache being flushed -> read cache -> location index -> entry log (with read-ahead
of the following entries of the same ledger).

All disk and RocksDB work runs in worker threads: one thread for checkpoints (and GC index updates), a pool
for reads. Every method called from the event loop returns quickly.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from bookie.config import BookieConfig
from bookie.storage import durable
from bookie.storage import journal_format as jf
from bookie.storage._write_path import WritePath
from bookie.storage.errors import (
    FencedError,
    LedgerDirFullError,
    MasterKeyMismatchError,
    NoLedgerError,
    StorageClosedError,
    StorageThrottledError,
)
from bookie.storage.gc_api import GcStorageApi
from bookie.storage.index import LedgerData
from bookie.storage.index_format import check_takeover
from bookie.storage.journal import (
    Journal,
    JournalDamage,
    JournalSettings,
    LogMark,
    keep_damaged,
    kept_damage,
    replay_records,
)
from bookie.storage.ledger_dir import LedgerDirStorage, LedgerState, WriteCache
from bookie.storage.log_files import LogFilesApi
from bookie.storage.reads import EngineReads
from bookie.waits import wait_event

log = logging.getLogger(__name__)

_IDS_LAC = struct.Struct(">qqq")
T = TypeVar("T")
# After a checkpoint started for adds waiting for room has failed (a full disk), the next one they start waits this
# long: they wake every 50 ms, and each failure used to be retried, and logged, at once, as long as the disk stayed
# full. Room made meanwhile (GC, a larger volume) is used within this time; the checkpoint timer goes on as well.
FAILED_CHECKPOINT_RETRY_S = 1.0
# Such a run of failures is logged at its first, then at most this often, with its count.
FAILED_CHECKPOINT_LOG_INTERVAL_S = 60.0


def sign_safe_mod(value: int, n: int) -> int:
    return value % n  # Python's % is already non-negative for positive n


class StorageEngine(EngineReads, GcStorageApi, LogFilesApi):
    """Ledgers and entries on this bookie's directories (see the module docstring)."""

    def __init__(self, conf: BookieConfig) -> None:
        self.conf = conf
        index_dirs = conf.effective_index_directories
        n = len(conf.ledger_directories)
        for i, d in enumerate(conf.ledger_directories):  # every directory, before anything is created in one
            check_takeover(d, index_dirs[i])
        self.dirs = [LedgerDirStorage(d, index_dirs[i], conf, n) for i, d in enumerate(conf.ledger_directories)]
        # Ledgers found in a directory at start stay there even if directories were added since
        # (allowStorageExpansion); new ledgers go to ledgerId mod #dirs, as in DbLedgerStorage.
        self._home_dir: dict[int, int] = {}
        settings = JournalSettings(
            max_group_wait_s=conf.journal_max_group_wait_msec / 1000,
            buffered_writes_threshold=conf.journal_buffered_writes_threshold,
            buffered_entries_threshold=conf.journal_buffered_entries_threshold,
            flush_when_queue_empty=conf.journal_flush_when_queue_empty,
            sync_data=conf.journal_sync_data,
            remove_from_page_cache=conf.journal_remove_from_page_cache,
            max_size_bytes=conf.journal_max_size_mb * 1024 * 1024,
            prealloc_bytes=conf.journal_pre_alloc_size_mb * 1024 * 1024,
            alignment=conf.journal_alignment_size,
            format_version=conf.journal_format_version_to_write,
            max_backups=conf.journal_max_backups,
            statistics=conf.enable_statistics,
        )
        self.journals = [Journal(d, settings, self._journal_failed) for d in conf.journal_directories]
        # Told (on the event loop, once) when an I/O error leaves the engine unable to keep its promise
        # (a journal write or fsync, or a checkpoint's write to a ledger directory): the server stops.
        self.on_fatal: Callable[[str], None] | None = None
        self.fatal_error: str | None = None
        # Told (on the loop) when an add was refused because its ledger directory would fill: the server
        # turns the bookie read-only at once instead of at the disk checker's next round.
        self.on_disk_full: Callable[[str], None] | None = None
        self.ledgers: dict[int, LedgerState] = {}
        self._flush_pool = ThreadPoolExecutor(1, thread_name_prefix="checkpoint")
        self._read_pool = ThreadPoolExecutor(max(1, conf.num_read_worker_threads), thread_name_prefix="read")
        self._disk_reads: dict[int, asyncio.Event] = {}
        self._checkpoint_lock = asyncio.Lock()
        # Set when a checkpoint has swapped write caches (or ended): adds waiting for room in a full cache look
        # again at once, not when the checkpoint's flush is over.
        self._caches_swapped = asyncio.Event()
        self._checkpoint_task: asyncio.Task[None] | None = None
        # The run of failed checkpoints that adds waiting for room started: its length, when the next may start,
        # when it was last logged.
        self._failed_checkpoints = 0
        self._next_checkpoint_at = 0.0
        self._failed_checkpoints_logged_at = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._closed = False
        self.last_checkpoint: LogMark | None = None
        # Damaged journal groups found by a replay, this one or an earlier one (kept in <journal>/corrupt/):
        # acknowledged records may be missing here, and the server keeps the bookie read-only.
        self.journal_damage: list[JournalDamage] = []
        self._replay_dirty: set[int] = set()
        self.stats = {"reads": 0, "read_cache_hits": 0, "checkpoints": 0, "throttled_adds": 0, "replayed_records": 0}
        for journal in self.journals:
            journal.writer.on_lac_watchers = self._wake_watchers
        # The add of the request hot path (C): the same steps as add_entry for a ledger it knows, over the same
        # directories, ledger states and journals (kept the same objects for the engine's life).
        self.write_path = WritePath(tuple(self.dirs), self._home_dir, self.ledgers,
                                    tuple(j.writer for j in self.journals), self._trigger_checkpoint,
                                    conf.disk_usage_threshold, conf.min_usable_size_for_entry_log_creation,
                                    conf.min_usable_size_for_high_priority_writes)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Load ledger state, replay the journal since the last checkpoint, start the journal and timer."""
        loop = asyncio.get_running_loop()
        loaded = await loop.run_in_executor(self._flush_pool, self._load_ledgers)
        self.ledgers.update((lid, LedgerState(data)) for lid, data in loaded.items())
        await self._replay()
        for journal in self.journals:
            journal.start()
        if self.stats["replayed_records"]:
            await self.checkpoint()
        self._timer = asyncio.create_task(self._checkpoint_timer(), name="checkpoint-timer")

    def _load_ledgers(self) -> dict[int, LedgerData]:
        result: dict[int, LedgerData] = {}
        for i, d in enumerate(self.dirs):
            found = d.ledger_index.load_all()
            result.update(found)
            self._home_dir.update(dict.fromkeys(found, i))
        return result

    async def close(self) -> None:
        """Checkpoint everything, stop the journal and close files; adds after this fail. A failed checkpoint
        still stops and closes everything, then raises: the journal keeps what it could not write, for the next
        start to replay."""
        if self._closed:
            return
        if self._timer is not None:
            self._timer.cancel()
        try:
            await self.checkpoint()
        finally:
            await self._release()

    async def _release(self) -> None:
        self._closed = self.write_path.closed = True
        loop = asyncio.get_running_loop()
        for journal in self.journals:
            await loop.run_in_executor(None, journal.close)
        for state in self.ledgers.values():
            for fut in state.watchers:
                if not fut.done():
                    fut.set_result(None)
        await loop.run_in_executor(self._flush_pool, self._close_dirs)
        self._flush_pool.shutdown(wait=True)
        self._read_pool.shutdown(wait=True)

    def _journal_failed(self, exc: BaseException) -> None:
        """A journal write or fsync failed (told on the event loop, once per journal)."""
        self._fatal(f"journal I/O error: {exc!r}")

    def _fatal(self, reason: str) -> None:
        if self.fatal_error is not None:
            return
        self.fatal_error = reason
        log.critical("storage cannot keep its promises any more: %s", reason)
        if self.on_fatal is not None:
            self.on_fatal(reason)

    def _close_dirs(self) -> None:
        for d in self.dirs:
            d.close()

    # ------------------------------------------------------------------ routing
    def dir_of(self, ledger_id: int) -> LedgerDirStorage:
        home = self._home_dir.get(ledger_id)
        return self.dirs[home if home is not None else sign_safe_mod(ledger_id, len(self.dirs))]

    def journal_of(self, ledger_id: int) -> Journal:
        return self.journals[sign_safe_mod(ledger_id, len(self.journals))]

    def _state(self, ledger_id: int) -> LedgerState:
        state = self.ledgers.get(ledger_id)
        if state is None or not state.data.exists:
            raise NoLedgerError(ledger_id)
        return state

    def _state_for_write(self, ledger_id: int, master_key: bytes) -> tuple[LedgerState, bool]:
        """The ledger's state, created with ``master_key`` when new (first writer wins)."""
        state = self.ledgers.get(ledger_id)
        if state is None:
            state = LedgerState(LedgerData(master_key=master_key))
            self.ledgers[ledger_id] = state
            self._persist(ledger_id, state.data)
            return state, True
        if not state.data.master_key and master_key:
            state.data = state.data.with_changes(master_key=master_key)
            self._persist(ledger_id, state.data)
        elif state.data.master_key != master_key:
            raise MasterKeyMismatchError(ledger_id)
        return state, False

    def _persist(self, ledger_id: int, data: LedgerData) -> None:
        """Ledger records are small and rare (create, fence, LAC): written through the checkpoint thread."""
        index = self.dir_of(ledger_id).ledger_index
        self._flush_pool.submit(index.put, ledger_id, data)

    def _journal_key_once(self, ledger_id: int, state: LedgerState) -> None:
        if not state.key_journaled:
            state.key_journaled = True
            fut = self.journal_of(ledger_id).append(jf.master_key_payload(ledger_id, state.data.master_key))
            fut.add_done_callback(_ignore_result)

    # ------------------------------------------------------------------ writes
    async def add_entry(self, entry: bytes | memoryview, master_key: bytes, *,
                        recovery: bool = False) -> tuple[int, int]:
        """Store one entry (its header names ledger and entry); returns them once durable."""
        body = bytes(entry)
        if self._closed:
            raise StorageClosedError("storage is closed")
        ledger_id, entry_id, lac = _IDS_LAC.unpack_from(body)
        state, _ = self._state_for_write(ledger_id, master_key)
        if state.data.fenced and not recovery:
            raise FencedError(ledger_id)
        await self._cache_put(ledger_id, entry_id, body, recovery)
        self._journal_key_once(ledger_id, state)
        await self.journal_of(ledger_id).append(body)
        self._advance_lac(state, lac)
        return ledger_id, entry_id

    def update_disk_space(self, free_and_total: dict[str, tuple[int, int]]) -> None:
        """The disk checker's measure of each ledger directory (by path): the add path's free-space figure."""
        for d in self.dirs:
            measured = free_and_total.get(str(d.ledger_dir))
            if measured is not None:
                d.free_bytes, d.total_bytes = measured

    def _check_room(self, d: LedgerDirStorage, size: int, high_priority: bool) -> None:
        """Refuse an entry that, once checkpointed, would take ``d`` past its disk reserve (diskUsageThreshold and
        minUsableSizeForEntryLogCreation; for recovery writes minUsableSizeForHighPriorityWrites). The rule is
        the hot path's own (WritePath.reserve_breached), so the two add paths cannot disagree on it."""
        if d.free_bytes is None:
            return
        pending = d.pending_bytes()
        reserve = self.write_path.reserve_breached(d.free_bytes, d.total_bytes, pending, size, high_priority)
        if reserve is None:
            return
        error = LedgerDirFullError(str(d.ledger_dir), d.free_bytes, pending, reserve)
        if self.on_disk_full is not None:
            self.on_disk_full(str(error))
        raise error

    async def _cache_put(self, ledger_id: int, entry_id: int, body: bytes, recovery: bool = False) -> None:
        d = self.dir_of(ledger_id)
        self._check_room(d, len(body), recovery)
        deadline = time.monotonic() + self.conf.db_storage_max_throttle_time_ms / 1000
        while not d.write_cache.has_room(len(body)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.count_throttled_add()
                raise StorageThrottledError(
                    f"write cache of {d.ledger_dir} full for {self.conf.db_storage_max_throttle_time_ms} ms")
            await self.wait_for_room(remaining)
        d.write_cache.put(ledger_id, entry_id, body)
        if d.write_cache.wants_flush:
            self._trigger_checkpoint()

    async def wait_for_room(self, seconds: float) -> None:
        """Until a checkpoint swaps the write caches (an add that found its cache full may fit then), at most
        ``seconds`` and 50 ms: a checkpoint is started if none is running, and the caller starts one again at each
        wake-up, since the one running may have swapped already (after a failed one, not before
        ``FAILED_CHECKPOINT_RETRY_S``)."""
        self._trigger_checkpoint()
        self._caches_swapped.clear()
        await wait_event(self._caches_swapped, max(0.0, min(seconds, 0.05)))

    def count_throttled_add(self) -> None:
        """An add refused after waiting dbStorage_maxThrottleTimeMs for room in its write cache."""
        self.stats["throttled_adds"] += 1

    def _advance_lac(self, state: LedgerState, lac: int) -> None:
        """An add of the general path is durable (the hot path's are advanced in C, the same way)."""
        if state.lac is None or lac > state.lac:
            state.lac = lac
            state.lac_updated_ms = int(time.time() * 1000)
            if state.watchers:  # long polls waiting for this LAC (most adds have none: no set to allocate)
                self._wake_watchers(state)

    @staticmethod
    def _wake_watchers(state: LedgerState) -> None:
        watchers, state.watchers = state.watchers, set()
        for fut in watchers:
            if not fut.done():
                fut.set_result(None)

    def fence(self, ledger_id: int, master_key: bytes) -> asyncio.Future[None]:
        """Fence a ledger: later non-recovery adds fail. The future completes once the fence is durable."""
        state, _ = self._state_for_write(ledger_id, master_key)
        if state.data.fenced:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        state.data = state.data.with_changes(fenced=True)
        self._persist(ledger_id, state.data)
        self._journal_key_once(ledger_id, state)
        return self.journal_of(ledger_id).append(jf.fence_payload(ledger_id))

    async def write_explicit_lac(self, ledger_id: int, lac: int, master_key: bytes, body: bytes | memoryview) -> None:
        state, _ = self._state_for_write(ledger_id, master_key)
        state.data = state.data.with_changes(explicit_lac=bytes(body))
        self._persist(ledger_id, state.data)
        self._journal_key_once(ledger_id, state)
        await self.journal_of(ledger_id).append(jf.explicit_lac_payload(ledger_id, bytes(body)))
        await self._ensure_lac(ledger_id, state)
        self._advance_lac(state, lac)

    async def force_ledger(self, ledger_id: int) -> None:
        await self.journal_of(ledger_id).barrier()

    # ------------------------------------------------------------------ deletes (GC)
    async def delete_ledger(self, ledger_id: int) -> None:
        """Forget a ledger: index entries and caches. Its bytes in entry logs become garbage for GC."""
        state = self.ledgers.pop(ledger_id, None)
        d = self.dir_of(ledger_id)
        self._home_dir.pop(ledger_id, None)
        d.write_cache.delete_ledger(ledger_id)
        if d.flushing is not None:
            d.flushing.delete_ledger(ledger_id)
            d.forget_appended()  # its locations would index the deleted ledger again
        d.read_cache.delete_ledger(ledger_id)
        if state is not None:
            for fut in state.watchers:
                if not fut.done():
                    fut.set_result(None)

        def drop() -> None:
            d.ledger_index.delete(ledger_id)
            d.locations.delete_ledger(ledger_id)

        await self._in_thread(self._flush_pool, drop)

    # ------------------------------------------------------------------ checkpoints
    def _trigger_checkpoint(self) -> None:
        running = self._checkpoint_task is not None and not self._checkpoint_task.done()
        if running or time.monotonic() < self._next_checkpoint_at:
            return
        self._checkpoint_task = asyncio.create_task(self.checkpoint(), name="checkpoint")
        self._checkpoint_task.add_done_callback(self._checkpoint_finished)

    def _checkpoint_finished(self, task: asyncio.Task[None]) -> None:
        """A checkpoint triggered by a full write cache ended. Failed, it is said (at the first failure of a run,
        then once a minute) and the next is started no sooner than ``FAILED_CHECKPOINT_RETRY_S``: the adds
        waiting for room are held back until one succeeds. An I/O error other than a full disk stops the bookie,
        as in the timer's."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            if self._failed_checkpoints:
                log.info("checkpoint succeeded after %d failed", self._failed_checkpoints)
            self._failed_checkpoints, self._next_checkpoint_at = 0, 0.0
            return
        if isinstance(exc, OSError) and exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            self._fatal(f"ledger directory I/O error in a checkpoint: {exc!r}")
            return
        now = time.monotonic()
        self._failed_checkpoints += 1
        self._next_checkpoint_at = now + FAILED_CHECKPOINT_RETRY_S
        since_logged = now - self._failed_checkpoints_logged_at
        if self._failed_checkpoints == 1 or since_logged >= FAILED_CHECKPOINT_LOG_INTERVAL_S:
            self._failed_checkpoints_logged_at = now
            log.error("checkpoint failed (%d in a row); adds wait for room in the write cache until one succeeds, "
                      "tried again every %.0f s: %r", self._failed_checkpoints, FAILED_CHECKPOINT_RETRY_S, exc)

    async def _checkpoint_timer(self) -> None:
        interval = self.conf.flush_interval / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.checkpoint()
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # the disk checker turns the bookie read-only
                    if await self.stop_if_an_index_is_stuck():
                        return
                    log.error("checkpoint failed, disk full; retrying at the next interval: %r", exc)
                    continue
                self._fatal(f"ledger directory I/O error in a checkpoint: {exc!r}")
                return
            except Exception:
                log.exception("checkpoint failed; retrying at the next interval")

    async def stop_if_an_index_is_stuck(self) -> bool:
        """Stop the bookie (fail-stop, ``on_fatal``) if an index kept RocksDB's write error from a full disk that
        has room again; whether it did. Asked by the checkpoint timer after a failed checkpoint, and by the disk
        checker before it lets the bookie be writable again: a bookie that would stop at its next checkpoint must
        not first tell clients it takes adds."""
        if self.fatal_error is not None:
            return True
        # Not on the flush pool: the disk checker must not wait behind a checkpoint to turn the bookie read-only.
        stuck = await asyncio.to_thread(self._index_stuck_with_room)
        if stuck is not None:
            self._fatal(stuck)
        return stuck is not None

    def _index_stuck_with_room(self) -> str | None:
        """Why the bookie must restart, if an index kept RocksDB's write error from a full disk that has room
        again (room for both write cache halves): only opening it again clears the error, and a restart does
        that and replays from the journal what the index had not made durable (blocking: a worker thread)."""
        for d in self.dirs:
            for index in (d.locations, d.ledger_index):
                if not index.keeps_a_write_error():
                    continue
                st = os.statvfs(d.index_current)
                if st.f_bavail * st.f_frsize >= 2 * d.write_cache.max_bytes:
                    return (f"the {index.KIND} {index.path} keeps RocksDB's write error from when its disk was full, "
                            "and the disk has room again: RocksDB takes writes only once opened again, so the bookie "
                            "stops for its supervisor to start it (the journal replays what the index had not synced)")
        return None

    async def checkpoint(self, replay_mark: list[LogMark] | None = None) -> None:
        """Flush write caches to entry logs and indexes, then persist how far the journal is covered.

        A directory's memory for entries is its two cache halves: the active cache (adds wait for room in it)
        and the one being flushed. A checkpoint that fails (a full disk) leaves the cache it could not flush
        where it is, and the next checkpoint flushes that one first and swaps the active cache only once it
        is in the entry logs: the two halves are never more, however many checkpoints fail, and adds are held
        back (throttled) instead.
        """
        async with self._checkpoint_lock:
            marks = replay_mark or [j.written_mark() for j in self.journals]
            for d in self.dirs:
                if d.flushing is not None:  # what a failed checkpoint could not flush
                    await self._flush_swapped(d)
            swapped = []
            for d in self.dirs:
                if len(d.write_cache):
                    d.flushing, d.write_cache = d.write_cache, WriteCache(d.write_cache.max_bytes)
                    swapped.append(d)
            self._caches_swapped.set()
            for d in swapped:
                await self._flush_swapped(d)
            # Fences, master keys and explicit LACs reach a directory's ledger index even when it had no
            # entries to flush: they must be durable before the mark passes their journal records.
            await self._in_thread(self._flush_pool, self._sync_ledger_indexes, swapped)
            await self._in_thread(self._flush_pool, self._write_marks, marks)
            self.last_checkpoint = max(marks) if marks else None
            self.stats["checkpoints"] += 1
            if replay_mark is None:
                for journal, mark in zip(self.journals, marks, strict=True):
                    journal.delete_before(mark)  # on the journal's removal thread: not waited for
            self._caches_swapped.set()

    async def _flush_swapped(self, d: LedgerDirStorage) -> None:
        """Flush ``d.flushing`` to the entry log and index, then let it go. If the flush fails it stays, for
        the next checkpoint (its entries are still read from it); a flushed one is never written again (that
        would leave a second copy of each entry on disk), nor one whose flush failed after its append (the
        retry only indexes: ``LedgerDirStorage.flush_cache``)."""
        assert d.flushing is not None
        cache = d.flushing
        try:
            await self._in_thread(self._flush_pool, d.flush_cache, cache)
        except asyncio.CancelledError:
            d.flushing = None  # the worker thread finishes the flush it started
            raise
        d.flushing = None
        if d.free_bytes is not None:  # until the disk checker measures again
            d.free_bytes -= cache.size
        # Its entries are released by the checkpoint thread, not here: that is a free per entry, on the loop.
        self._flush_pool.submit(cache.clear)

    def _sync_ledger_indexes(self, flushed: list[LedgerDirStorage]) -> None:
        for d in self.dirs:
            if d not in flushed:  # flush_cache synced those
                d.ledger_index.sync()

    def _mark_file(self, journal_index: int) -> str:
        return "lastMark" if len(self.journals) == 1 else f"lastMark.{journal_index}"

    def _write_marks(self, marks: list[LogMark]) -> None:
        for d in self.dirs:
            for i, mark in enumerate(marks):
                durable.stage_file(d.current / self._mark_file(i), mark.encode())
            # Renamed into place and their directory fsynced (with the indexes' sequence files the checkpoint
            # staged there): the journals before the marks are trimmed next.
            d.settle_names()

    def _read_marks(self) -> list[LogMark]:
        marks = []
        for i in range(len(self.journals)):
            best = LogMark(0, 0)
            for d in self.dirs:
                try:
                    best = max(best, LogMark.decode((d.current / self._mark_file(i)).read_bytes()))
                except FileNotFoundError:
                    continue
            marks.append(best)
        return marks

    # ------------------------------------------------------------------ replay
    async def _replay(self) -> None:
        """Re-apply journal records after the last checkpoint (adds, master keys, fences, explicit LACs).

        Checkpoints during replay keep the old marks (replaying again is idempotent); the marks move only once
        the journals have started new files, in the checkpoint that ``start`` runs right after.
        """
        marks = await self._in_thread(self._flush_pool, self._read_marks)
        for i, journal in enumerate(self.journals):
            damages: list[JournalDamage] = []
            records = await self._in_thread(self._flush_pool, lambda j=journal, m=marks[i], d=damages: list(
                replay_records(j.current_dir.parent, m, d)))
            for damage in damages:
                kept = await self._in_thread(self._flush_pool, keep_damaged, damage)
                log.error("%s: its records are lost here; the records after it were replayed", kept.describe())
            for _, record in records:
                self._apply_replayed(record)
                self.stats["replayed_records"] += 1
                d = self.dir_of(record.ledger_id)
                if d.write_cache.wants_flush:
                    await self.checkpoint(replay_mark=marks)
            if records:
                log.info("journal %s: replayed %d records", journal.current_dir, len(records))
        dirty = {lid: self.ledgers[lid].data for lid in self._replay_dirty}
        self._replay_dirty.clear()
        await self._in_thread(self._flush_pool, self._persist_all, dirty)
        self.journal_damage = await self._in_thread(self._flush_pool, lambda: [
            damage for j in self.journals for damage in kept_damage(j.current_dir.parent)])

    def _persist_all(self, items: dict[int, LedgerData]) -> None:
        for lid, data in items.items():
            self.dir_of(lid).ledger_index.put(lid, data)

    def _apply_replayed(self, record: jf.JournalRecord) -> None:
        lid = record.ledger_id
        state = self.ledgers.get(lid)
        if state is None:
            state = self.ledgers[lid] = LedgerState(LedgerData())
        if record.kind is jf.Kind.ENTRY:
            self.dir_of(lid).write_cache.put(lid, record.entry_id, record.data)
            lac = _IDS_LAC.unpack_from(record.data)[2] if len(record.data) >= _IDS_LAC.size else -1
            if state.lac is not None:
                state.lac = max(state.lac, lac)
            changed = False
        elif record.kind is jf.Kind.MASTER_KEY:
            changed = not state.data.master_key
            if changed:
                state.data = state.data.with_changes(master_key=record.data)
        elif record.kind is jf.Kind.FENCE:
            changed = not state.data.fenced
            state.data = state.data.with_changes(fenced=True)
        elif record.kind is jf.Kind.EXPLICIT_LAC:
            changed = True
            state.data = state.data.with_changes(explicit_lac=record.data)
        else:
            return
        if changed:
            self._replay_dirty.add(lid)

    # ------------------------------------------------------------------ for the admin API
    def disk_files(self) -> dict[str, list[str]]:
        """File names (not paths) by type: journals, entry logs, index databases (``list_disk_file``)."""
        out: dict[str, list[str]] = {"journal": [], "entrylog": [], "index": []}
        for journal in self.journals:
            out["journal"] += [f"{i:x}.txn" for i in journal.journal_ids()]
        for d in self.dirs:
            out["entrylog"] += [d.entry_logger.path_of(i).name for i in d.entry_logger.log_ids()]
            out["index"] += [Path(d.ledger_index.db.path()).name, Path(d.locations.db.path()).name]
        return out

    def cache_sizes(self) -> tuple[int, int]:
        """Bytes held by the write caches and by the read caches of every ledger directory."""
        return sum(d.write_cache.size for d in self.dirs), sum(d.read_cache.size for d in self.dirs)

    # ------------------------------------------------------------------ helpers
    async def _in_thread(self, pool: ThreadPoolExecutor, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)


def _ignore_result(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("journal meta record failed: %r", fut.exception())
