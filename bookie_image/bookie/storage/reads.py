"""The storage engine's read path: write cache -> cache being flushed -> read cache -> location index ->
entry log (with read-ahead of the following entries of the same ledger), and the LAC it derives from it.
Disk and RocksDB reads run on the engine's read pool."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from bookie.storage.errors import NoEntryError
from bookie.storage.ledger_dir import LedgerDirStorage, LedgerState

_IDS_LAC = struct.Struct(">qqq")
T = TypeVar("T")


class EngineReads:
    """Mixed into ``StorageEngine``: its read methods, over the state the engine owns."""

    ledgers: dict[int, LedgerState]
    stats: dict[str, int]
    _closed: bool
    _read_pool: ThreadPoolExecutor
    _disk_reads: dict[int, asyncio.Event]  # ledger id -> its disk read under way

    def _state(self, ledger_id: int) -> LedgerState:
        raise NotImplementedError

    def dir_of(self, ledger_id: int) -> LedgerDirStorage:
        raise NotImplementedError

    async def _in_thread(self, pool: ThreadPoolExecutor, fn: Callable[..., T], *args: object) -> T:
        raise NotImplementedError

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

    def read_cached(self, ledger_id: int, entry_id: int) -> bytes | None:
        """An entry from memory, for a read answered without a task; None when the read must take
        ``read_entry``'s way: no such ledger, its LAC not computed yet since the start, or the entry on disk."""
        state = self.ledgers.get(ledger_id)
        if state is None or not state.data.exists or state.lac is None:
            return None
        d = self.dir_of(ledger_id)
        body = self._in_write_caches(d, ledger_id, entry_id) or self._in_read_cache(d, ledger_id, entry_id)
        if body is not None:
            self.stats["reads"] += 1
        return body

    @staticmethod
    def _in_write_caches(d: LedgerDirStorage, ledger_id: int, entry_id: int) -> bytes | None:
        body = d.write_cache.get(ledger_id, entry_id)
        if body is None and d.flushing is not None:
            body = d.flushing.get(ledger_id, entry_id)
        return body

    def _in_read_cache(self, d: LedgerDirStorage, ledger_id: int, entry_id: int) -> bytes | None:
        body = d.read_cache.get(ledger_id, entry_id)
        if body is not None:
            d.read_cache.hits += 1
            self.stats["read_cache_hits"] += 1
        return body

    async def _read_body(self, ledger_id: int, entry_id: int) -> bytes:
        d = self.dir_of(ledger_id)
        body = self._in_write_caches(d, ledger_id, entry_id) or self._in_read_cache(d, ledger_id, entry_id)
        if body is None:
            body = await self._read_from_disk(d, ledger_id, entry_id)
        return body

    async def _read_from_disk(self, d: LedgerDirStorage, ledger_id: int, entry_id: int) -> bytes:
        """One disk read (with read-ahead) per ledger at a time, as BookKeeper's reads of a ledger share one
        ordered thread: a reader that finds one under way waits for it and looks in the read cache again, so
        a catch-up's many outstanding reads cost one read-ahead, not one each."""
        while (under_way := self._disk_reads.get(ledger_id)) is not None:
            await under_way.wait()
            body = self._in_read_cache(d, ledger_id, entry_id)
            if body is not None:
                return body
        d.read_cache.misses += 1
        done = self._disk_reads[ledger_id] = asyncio.Event()
        try:
            return await self._in_thread(self._read_pool, d.read_from_disk, ledger_id, entry_id)
        finally:
            del self._disk_reads[ledger_id]
            done.set()

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
            state.watchers.add(fut)
            try:
                async with asyncio.timeout(remaining):
                    await fut
            except TimeoutError:
                pass
            finally:
                state.watchers.discard(fut)
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
