"""The admin API's entry-log reads (``bookie.http.backend.EntryLogFilesAdmin``) over storage's entry-log files API
(``bookie.storage.log_files``): listing, decoded header and ledgers map, and throttled byte ranges that hold the log
against GC's deletion while they are read.

The throttle protects the bookie's own work from its auditors: every byte read for a client passes one token bucket
of ``httpEntryLogReadRateByBytes`` per second (all requests together), and at most ``httpEntryLogReadConcurrency``
logs are open for reading at once (fixed at start); later requests wait for a slot, holding nothing meanwhile. The
rate may be changed at run time (``PUT /api/v1/config/server_config``). Disk reads run in a pool of that many
threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from bookie.config import BookieConfig
from bookie.http.backend import EntryLogFile, EntryLogNotFound, EntryLogUnreadable
from bookie.storage import entrylog_format as ef
from bookie.storage.log_files import HeldLog, LogFileSource, NoSuchLogError

CHUNK_BYTES = 256 * 1024  # at most one disk read and one socket write; the memory a request holds
MIN_CHUNK_BYTES = 4096
T = TypeVar("T")


class ByteRate:
    """Token bucket in bytes per second for the event loop; a rate ``<= 0`` means unlimited. The rate is read at
    every acquisition (a ``PUT server_config`` applies at once). It holds at most a tenth of a second of tokens,
    so an idle spell is never followed by a burst."""

    def __init__(self, rate: Callable[[], float]) -> None:
        self.rate = rate
        self._tokens = 0.0
        self._last: float | None = None
        self._lock = asyncio.Lock()

    async def acquire(self, amount: int) -> None:
        rate = self.rate()
        if rate <= 0:
            return
        async with self._lock:  # one waiter at a time: requests share the rate fairly, in arrival order
            loop = asyncio.get_running_loop()
            now = loop.time()
            last = now if self._last is None else self._last
            self._tokens = min(rate / 10, self._tokens + (now - last) * rate) - amount
            self._last = now
            if self._tokens < 0:
                await asyncio.sleep(-self._tokens / rate)


class _OpenLog:
    """One held log of one request (``bookie.http.backend.OpenEntryLog``)."""

    def __init__(self, reads: EntryLogReads, held: HeldLog) -> None:
        self._reads = reads
        self._held = held
        self.size = held.size
        self.mtime_ms = held.mtime_ns // 1_000_000

    async def chunks(self, offset: int, length: int) -> AsyncIterator[bytes]:
        end = min(offset + length, self.size)
        chunk = self._reads.chunk_bytes()
        while offset < end:
            n = min(chunk, end - offset)
            await self._reads.rate.acquire(n)
            data = await self._reads.in_thread(self._held.pread, offset, n)
            if not data:
                return
            yield data
            offset += len(data)


class EntryLogReads:
    """Entry-log reads of one bookie's admin API (see the module docstring)."""

    def __init__(self, conf: BookieConfig, engine: LogFileSource) -> None:
        self.engine = engine
        self.conf = conf
        self.rate = ByteRate(lambda: conf.http_entry_log_read_rate_by_bytes)
        self.concurrency = conf.http_entry_log_read_concurrency
        self._slots = asyncio.Semaphore(self.concurrency)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="log-read")

    def chunk_bytes(self) -> int:
        """A tenth of a second of the rate per chunk (within bounds): a reader that went away is noticed at the
        next write, a moment later, and its hold on the log released."""
        rate = self.conf.http_entry_log_read_rate_by_bytes
        return CHUNK_BYTES if rate <= 0 else max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, rate // 10))

    async def in_thread(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def list_files(self) -> list[EntryLogFile]:
        infos = await self.in_thread(self.engine.log_files)
        return [EntryLogFile(i.dir_index, str(i.ledger_dir), i.log_id, i.size, i.mtime_ns // 1_000_000, i.active)
                for i in infos]

    async def _hold(self, dir_index: int, log_id: int) -> HeldLog:
        try:
            held: HeldLog = await self.in_thread(self.engine.open_log_file, dir_index, log_id)
        except NoSuchLogError as exc:
            raise EntryLogNotFound(str(exc)) from None
        return held

    @contextlib.asynccontextmanager
    async def open(self, dir_index: int, log_id: int) -> AsyncIterator[_OpenLog]:
        async with self._slots:
            held = await self._hold(dir_index, log_id)
            try:
                yield _OpenLog(self, held)
            finally:
                held.close()

    async def _read_header(self, dir_index: int, log_id: int) -> tuple[HeldLog, ef.LogHeader]:
        """The held log and its header; the caller closes the log. Raises ``EntryLogUnreadable``."""
        held = await self._hold(dir_index, log_id)
        try:
            await self.rate.acquire(ef.HEADER_SIZE)
            raw = await self.in_thread(held.pread, 0, ef.HEADER_SIZE)
            try:
                return held, ef.LogHeader.decode(raw)
            except ef.CorruptRecord as exc:
                raise EntryLogUnreadable(f"entry log {ef.log_file_name(log_id)}: {exc.reason}") from None
        except BaseException:
            held.close()
            raise

    async def header(self, dir_index: int, log_id: int) -> dict[str, Any]:
        async with self._slots:
            held, head = await self._read_header(dir_index, log_id)
            held.close()
        return {"size": held.size, "mtimeMs": held.mtime_ns // 1_000_000, "version": head.version,
                "ledgersMapOffset": head.ledgers_map_offset, "ledgersCount": head.ledgers_count,
                "hasLedgersMap": head.has_ledgers_map}

    async def ledgers_map(self, dir_index: int, log_id: int) -> dict[int, int]:
        name = ef.log_file_name(log_id)
        async with self._slots:
            held, head = await self._read_header(dir_index, log_id)
            try:
                if not head.has_ledgers_map:
                    raise EntryLogUnreadable(f"entry log {name} has no ledgers map (the active log, or one a "
                                             "crash left unfinished): read its records by ranges instead")
                offset = head.ledgers_map_offset
                if offset > held.size:
                    raise EntryLogUnreadable(f"entry log {name}: ledgers map offset {offset} is past the end "
                                             f"({held.size} bytes)")
                await self.rate.acquire(held.size - offset)
                tail = await self.in_thread(held.pread, offset, held.size - offset)
            finally:
                held.close()
        # The decoder wants the map at its file offset: hand it the tail behind one spare byte.
        try:
            return ef.decode_ledgers_map(bytes(1) + tail, ef.LogHeader(head.version, 1, head.ledgers_count))
        except ef.CorruptRecord as exc:
            raise EntryLogUnreadable(f"entry log {name}: ledgers map: {exc.reason}") from None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
