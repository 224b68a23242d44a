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
import logging
import os
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bookie.config import BookieConfig
from bookie.metrics import OpStat
from bookie.storage import journal_format as jf
from bookie.storage.caches import ReadCache, WriteCache
from bookie.storage.entrylog import EntryLogger
from bookie.storage.errors import (
    FencedError,
    MasterKeyMismatchError,
    NoEntryError,
    NoLedgerError,
    StorageClosedError,
    StorageThrottledError,
)
from bookie.storage.index import LedgerData, LedgerIndex, LocationIndex
from bookie.storage.journal import Durable, Journal, JournalSettings, LogMark, replay_records

log = logging.getLogger(__name__)

_IDS_LAC = struct.Struct(">qqq")
T = TypeVar("T")


def sign_safe_mod(value: int, n: int) -> int:
    return value % n  # Python's % is already non-negative for positive n


@dataclass
class LedgerState:
    """In-memory view of one ledger on this bookie (``TransientLedgerInfo`` + ``LedgerData``)."""

    data: LedgerData
    lac: int | None = None           # None: not computed yet since start
    lac_updated_ms: int = 0
    key_journaled: bool = False      # master key record written in this run
    watchers: list[asyncio.Future[None]] = field(default_factory=list)


class LedgerDirStorage:
    """One ledger directory: its entry logs, indexes and caches (``SingleDirectoryDbLedgerStorage``)."""

    def __init__(self, ledger_dir: Path, index_dir: Path, conf: BookieConfig, n_dirs: int) -> None:
        self.ledger_dir = ledger_dir
        self.index_dir = index_dir
        self.current = ledger_dir / "current"
        self.entry_logger = EntryLogger(self.current, conf.log_size_limit)
        self.ledger_index = LedgerIndex(index_dir / "current")
        self.locations = LocationIndex(index_dir / "current")
        half = max(1, conf.db_storage_write_cache_max_size_mb * 1024 * 1024 // n_dirs // 2)
        self.write_cache = WriteCache(half)
        self.flushing: WriteCache | None = None
        self.read_cache = ReadCache(conf.db_storage_read_ahead_cache_max_size_mb * 1024 * 1024 // n_dirs)
        self.read_ahead_entries = conf.db_storage_read_ahead_cache_batch_size
        # BookKeeper's bookie_read_entry and bookie_readahead_batch_{count,size} (bookie.metrics).
        self.read_entry_stat, self.readahead_count_stat, self.readahead_size_stat = OpStat(), OpStat(), OpStat()
        bytes_limit = conf.db_storage_read_ahead_cache_batch_bytes_size
        self.read_ahead_bytes = bytes_limit if bytes_limit > 0 else 1024 * 1024

    # --- blocking parts (worker threads)
    def flush_cache(self, cache: WriteCache) -> int:
        """Append a swapped write cache to the entry log and index it; returns entries written."""
        batch = self.entry_logger.append_many(cache.sorted_entries())
        self.entry_logger.flush()
        if batch:
            self.locations.put_many(batch)
        self.locations.sync()
        self.ledger_index.sync()
        return len(batch)

    def read_from_disk(self, ledger_id: int, entry_id: int) -> bytes:
        location = self.locations.get(ledger_id, entry_id)
        if location is None:
            raise NoEntryError(ledger_id, entry_id)
        body = self.entry_logger.read(ledger_id, entry_id, location)
        entries, nbytes = 1, len(body)
        if self.read_ahead_entries > 1 and self.read_cache.max_bytes > 0:
            budget = min(self.read_ahead_bytes, self.read_cache.max_bytes // 2)
            for next_id, next_body in self.entry_logger.read_ahead(
                    ledger_id, location, self.read_ahead_entries - 1, budget):
                self.read_cache.put(ledger_id, next_id, next_body)
                entries, nbytes = entries + 1, nbytes + len(next_body)
        self.readahead_count_stat.record(entries)
        self.readahead_size_stat.record(nbytes)
        return body

    def last_entry_on_disk(self, ledger_id: int) -> int | None:
        return self.locations.last_entry(ledger_id)

    def close(self) -> None:
        self.entry_logger.close()
        self.locations.close()
        self.ledger_index.close()


class StorageEngine:
    """Ledgers and entries on this bookie's directories (see the module docstring)."""

    def __init__(self, conf: BookieConfig) -> None:
        self.conf = conf
        index_dirs = conf.effective_index_directories
        n = len(conf.ledger_directories)
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
            max_size_bytes=conf.journal_max_size_mb * 1024 * 1024,
            prealloc_bytes=conf.journal_pre_alloc_size_mb * 1024 * 1024,
            alignment=conf.journal_alignment_size,
            format_version=conf.journal_format_version_to_write,
            max_backups=conf.journal_max_backups,
        )
        self.journals = [Journal(d, settings) for d in conf.journal_directories]
        self.ledgers: dict[int, LedgerState] = {}
        self._flush_pool = ThreadPoolExecutor(1, thread_name_prefix="checkpoint")
        self._read_pool = ThreadPoolExecutor(max(1, conf.num_read_worker_threads), thread_name_prefix="read")
        self._checkpoint_lock = asyncio.Lock()
        self._checkpoint_done = asyncio.Event()
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._timer: asyncio.Task[None] | None = None
        self._closed = False
        self.last_checkpoint: LogMark | None = None
        self._replay_dirty: set[int] = set()
        self.stats = {"adds": 0, "reads": 0, "read_cache_hits": 0, "checkpoints": 0, "throttled_adds": 0,
                      "replayed_records": 0}

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Load ledger state, replay the journal since the last checkpoint, start the journal and timer."""
        loop = asyncio.get_running_loop()
        loaded = await loop.run_in_executor(self._flush_pool, self._load_ledgers)
        self.ledgers = {lid: LedgerState(data) for lid, data in loaded.items()}
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
        """Checkpoint everything, stop the journal and close files; adds after this fail."""
        if self._closed:
            return
        if self._timer is not None:
            self._timer.cancel()
        await self.checkpoint()
        self._closed = True
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
        await self._cache_put(ledger_id, entry_id, body)
        self._journal_key_once(ledger_id, state)
        await self.journal_of(ledger_id).append(body)
        self.stats["adds"] += 1
        self._advance_lac(state, lac)
        return ledger_id, entry_id

    def add_entry_nowait(self, entry: bytes | memoryview, master_key: bytes, durable: Durable, *,
                         recovery: bool = False) -> bool:
        """``add_entry`` without a coroutine or a future, for the common case of a write cache with room: the
        same checks and steps in the same order; ``durable(None)`` is called on the loop once the entry is
        durable (its LAC has advanced by then), ``durable(error)`` if the journal failed. False when the write
        cache is full: nothing was done, and the caller uses ``add_entry``, which throttles."""
        body = bytes(entry)
        if self._closed:
            raise StorageClosedError("storage is closed")
        ledger_id, entry_id, lac = _IDS_LAC.unpack_from(body)
        d = self.dir_of(ledger_id)
        if not d.write_cache.has_room(len(body)):
            return False
        state, _ = self._state_for_write(ledger_id, master_key)
        if state.data.fenced and not recovery:
            raise FencedError(ledger_id)
        d.write_cache.put(ledger_id, entry_id, body)
        if d.write_cache.size >= d.write_cache.max_bytes:
            self._trigger_checkpoint()
        self._journal_key_once(ledger_id, state)
        self.journal_of(ledger_id).append_then(body, lambda error: self._added(state, lac, error, durable))
        return True

    def _added(self, state: LedgerState, lac: int, error: BaseException | None, durable: Durable) -> None:
        if error is None:
            self.stats["adds"] += 1
            self._advance_lac(state, lac)
        durable(error)

    async def _cache_put(self, ledger_id: int, entry_id: int, body: bytes) -> None:
        d = self.dir_of(ledger_id)
        deadline = time.monotonic() + self.conf.db_storage_max_throttle_time_ms / 1000
        while not d.write_cache.has_room(len(body)):
            self._trigger_checkpoint()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stats["throttled_adds"] += 1
                raise StorageThrottledError(
                    f"write cache of {d.ledger_dir} full for {self.conf.db_storage_max_throttle_time_ms} ms")
            self._checkpoint_done.clear()
            try:
                await asyncio.wait_for(self._checkpoint_done.wait(), timeout=min(remaining, 0.05))
            except TimeoutError:
                pass
        d.write_cache.put(ledger_id, entry_id, body)
        if d.write_cache.size >= d.write_cache.max_bytes:
            self._trigger_checkpoint()

    def _advance_lac(self, state: LedgerState, lac: int) -> None:
        if state.lac is None or lac > state.lac:
            state.lac = lac
            state.lac_updated_ms = int(time.time() * 1000)
            watchers, state.watchers = state.watchers, []
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

    # ------------------------------------------------------------------ reads
    async def read_entry(self, ledger_id: int, entry_id: int) -> bytes:
        """An entry's bytes; ``entry_id == -1`` is the last entry stored here."""
        state = self._state(ledger_id)
        self.stats["reads"] += 1
        if entry_id == -1:
            last = await self._last_entry(ledger_id)
            if last is None:
                raise NoEntryError(ledger_id, entry_id)
            entry_id = last
        body = await self._read_body(ledger_id, entry_id)
        if state.lac is None:
            await self._ensure_lac(ledger_id, state)
        return body

    async def _read_body(self, ledger_id: int, entry_id: int) -> bytes:
        d = self.dir_of(ledger_id)
        body = d.write_cache.get(ledger_id, entry_id)
        if body is None and d.flushing is not None:
            body = d.flushing.get(ledger_id, entry_id)
        if body is None:
            body = d.read_cache.get(ledger_id, entry_id)
            if body is not None:
                self.stats["read_cache_hits"] += 1
        if body is None:
            body = await self._in_thread(self._read_pool, d.read_from_disk, ledger_id, entry_id)
        return body

    async def _last_entry(self, ledger_id: int) -> int | None:
        d = self.dir_of(ledger_id)
        candidates = [d.write_cache.last_entry(ledger_id)]
        if d.flushing is not None:
            candidates.append(d.flushing.last_entry(ledger_id))
        candidates.append(await self._in_thread(self._read_pool, d.last_entry_on_disk, ledger_id))
        found = [c for c in candidates if c is not None]
        return max(found) if found else None

    async def _ensure_lac(self, ledger_id: int, state: LedgerState) -> int:
        """The cached LAC; computed from the last stored entry the first time after a start."""
        if state.lac is None:
            lac = -1
            last = await self._last_entry(ledger_id)
            if last is not None:
                body = await self._read_body(ledger_id, last)
                if len(body) >= _IDS_LAC.size:
                    lac = _IDS_LAC.unpack_from(body)[2]
            if state.lac is None or lac > state.lac:
                state.lac = lac
        return state.lac

    def last_add_confirmed(self, ledger_id: int) -> int:
        state = self.ledgers.get(ledger_id)
        return -1 if state is None or state.lac is None else state.lac

    def lac_update_timestamp(self, ledger_id: int) -> int:
        state = self.ledgers.get(ledger_id)
        return 0 if state is None else state.lac_updated_ms

    async def wait_for_lac(self, ledger_id: int, previous: int, timeout_s: float) -> int:
        """Long poll: the LAC as soon as it passes ``previous``, or whatever it is after ``timeout_s``."""
        state = self._state(ledger_id)
        lac = await self._ensure_lac(ledger_id, state)
        deadline = time.monotonic() + timeout_s
        while lac <= previous and not self._closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            state.watchers.append(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                pass
            finally:
                if fut in state.watchers:
                    state.watchers.remove(fut)
            lac = self.last_add_confirmed(ledger_id)
        return lac

    async def read_explicit_lac(self, ledger_id: int) -> bytes | None:
        return self._state(ledger_id).data.explicit_lac

    async def list_entries(self, ledger_id: int) -> list[int]:
        self._state(ledger_id)
        d = self.dir_of(ledger_id)
        on_disk = await self._in_thread(self._read_pool, lambda: [e for e, _ in d.locations.entries(ledger_id)])
        cached = set(d.write_cache.entry_ids(ledger_id))
        if d.flushing is not None:
            cached.update(d.flushing.entry_ids(ledger_id))
        return sorted(cached.union(on_disk))

    def ledger_ids(self) -> list[int]:
        return sorted(lid for lid, s in self.ledgers.items() if s.data.exists)

    def has_ledger(self, ledger_id: int) -> bool:
        state = self.ledgers.get(ledger_id)
        return state is not None and state.data.exists

    async def entry_locations(self, ledger_id: int) -> list[tuple[int, int]]:
        """(entry id, location) of a ledger's flushed entries (tools and the REST API)."""
        self._state(ledger_id)
        d = self.dir_of(ledger_id)
        return await self._in_thread(self._read_pool, lambda: list(d.locations.entries(ledger_id)))

    # ------------------------------------------------------------------ deletes (GC)
    async def delete_ledger(self, ledger_id: int) -> None:
        """Forget a ledger: index entries and caches. Its bytes in entry logs become garbage for GC."""
        state = self.ledgers.pop(ledger_id, None)
        d = self.dir_of(ledger_id)
        self._home_dir.pop(ledger_id, None)
        d.write_cache.delete_ledger(ledger_id)
        if d.flushing is not None:
            d.flushing.delete_ledger(ledger_id)
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
        if self._checkpoint_task is None or self._checkpoint_task.done():
            self._checkpoint_task = asyncio.create_task(self.checkpoint(), name="checkpoint")

    async def _checkpoint_timer(self) -> None:
        interval = self.conf.flush_interval / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.checkpoint()
            except Exception:
                log.exception("checkpoint failed; retrying at the next interval")

    async def checkpoint(self, replay_mark: list[LogMark] | None = None) -> None:
        """Flush write caches to entry logs and indexes, then persist how far the journal is covered."""
        async with self._checkpoint_lock:
            marks = replay_mark or [j.written_mark() for j in self.journals]
            swapped = []
            for d in self.dirs:
                if len(d.write_cache):
                    d.flushing, d.write_cache = d.write_cache, WriteCache(d.write_cache.max_bytes)
                    swapped.append(d)
            try:
                for d in swapped:
                    assert d.flushing is not None
                    await self._in_thread(self._flush_pool, d.flush_cache, d.flushing)
                await self._in_thread(self._flush_pool, self._write_marks, marks)
            except BaseException:
                # The marks did not move, but the flushed cache must not be dropped either (a full disk,
                # ENOSPC): its entries go back to the write cache and the next checkpoint writes them again.
                for d in swapped:
                    _restore(d)
                raise
            finally:
                for d in swapped:
                    d.flushing = None
            self.last_checkpoint = max(marks) if marks else None
            self.stats["checkpoints"] += 1
            if replay_mark is None:
                for journal, mark in zip(self.journals, marks, strict=True):
                    await self._in_thread(self._flush_pool, journal.delete_before, mark)
            self._checkpoint_done.set()

    def _mark_file(self, journal_index: int) -> str:
        return "lastMark" if len(self.journals) == 1 else f"lastMark.{journal_index}"

    def _write_marks(self, marks: list[LogMark]) -> None:
        for d in self.dirs:
            for i, mark in enumerate(marks):
                path = d.current / self._mark_file(i)
                tmp = path.with_suffix(".tmp")
                with open(tmp, "wb") as f:
                    f.write(mark.encode())
                    f.flush()
                    os.fsync(f.fileno())
                tmp.replace(path)

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
            records = await self._in_thread(self._flush_pool, lambda j=journal, m=marks[i]: list(
                replay_records(j.current_dir.parent, m)))
            for _, record in records:
                self._apply_replayed(record)
                self.stats["replayed_records"] += 1
                d = self.dir_of(record.ledger_id)
                if d.write_cache.size >= d.write_cache.max_bytes:
                    await self.checkpoint(replay_mark=marks)
            if records:
                log.info("journal %s: replayed %d records", journal.current_dir, len(records))
        dirty = {lid: self.ledgers[lid].data for lid in self._replay_dirty}
        self._replay_dirty.clear()
        await self._in_thread(self._flush_pool, self._persist_all, dirty)

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

    # ------------------------------------------------------------------ helpers
    async def _in_thread(self, pool: ThreadPoolExecutor, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    # ------------------------------------------------------------------ GC hooks (bookie.gc, issue 3)
    # What garbage collection needs from the engine, kept in one place. Blocking hooks are called from the
    # GC thread; index updates go through the checkpoint thread so they are ordered with checkpoints and
    # ledger deletions.
    def gc_flushed_logs(self, dir_index: int) -> tuple[list[int], int]:
        """(ids of the directory's entry logs, id of the active log) as one consistent snapshot.

        Taken on the checkpoint thread, between checkpoints: a log that a running checkpoint rolled past is
        complete but its entries are indexed only when that checkpoint ends, so GC must not see it before.
        And under the entry logger's lock: a log being created must never look like a finished empty one.
        """
        logger = self.dirs[dir_index].entry_logger

        def snapshot() -> tuple[list[int], int]:
            with logger._lock:
                return logger.log_ids(), logger.active_log_id

        return self._flush_pool.submit(snapshot).result()

    def gc_allocate_log_id(self, dir_index: int) -> int:
        """A fresh entry-log id for a compaction output, recorded in ``lastId`` so the engine never reuses it."""
        logger = self.dirs[dir_index].entry_logger
        with logger._lock:
            log_id = max(logger._last_id(), logger.active_log_id) + 1
            (logger.current_dir / "lastId").write_text(f"{log_id:x}\n")
            return log_id

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
        locations = self.dirs[dir_index].locations

        def apply() -> int:
            moved = locations.replace_if_unchanged(moves)
            locations.sync()
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


def _restore(d: LedgerDirStorage) -> None:
    """Put a failed checkpoint's entries back in front of newer writes of the same entries."""
    if d.flushing is None:
        return
    for ledger_id, entry_id, body in d.flushing.sorted_entries():
        if d.write_cache.get(ledger_id, entry_id) is None:
            d.write_cache.put(ledger_id, entry_id, body)


def _ignore_result(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("journal meta record failed: %r", fut.exception())
