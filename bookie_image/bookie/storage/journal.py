"""The journal: every add, fence and LAC is appended here and made durable before it is acknowledged.

One dedicated writer thread per journal directory does group commit: it takes everything queued, writes it
in one go, fsyncs once and then completes all the waiting futures on the event loop. The event loop never
blocks on the disk. ``checkpoint_mark`` tells how far the journal is written, so that after the write cache
is flushed to entry logs the older journal files can be deleted (``LogMark``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from bookie.storage import journal_format as jf
from bookie.storage.errors import StorageClosedError, StorageIOError

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True, slots=True)
class LogMark:
    """A position in the journal: (journal file id, byte offset)."""

    log_id: int
    offset: int

    def encode(self) -> bytes:
        return self.log_id.to_bytes(8, "big", signed=True) + self.offset.to_bytes(8, "big", signed=True)

    @staticmethod
    def decode(data: bytes) -> LogMark:
        if len(data) < 16:
            return LogMark(0, 0)
        return LogMark(int.from_bytes(data[:8], "big", signed=True), int.from_bytes(data[8:16], "big", signed=True))


@dataclass(frozen=True, slots=True)
class JournalSettings:
    max_group_wait_s: float = 0.002
    buffered_writes_threshold: int = 512 * 1024
    buffered_entries_threshold: int = 0
    sync_data: bool = True
    max_size_bytes: int = 2048 * 1024 * 1024
    prealloc_bytes: int = 16 * 1024 * 1024
    alignment: int = 512
    format_version: int = jf.FORMAT_V6
    max_backups: int = 5


_STOP = object()
_LENGTH = struct.Struct(">i")
_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class Journal:
    """Append-only journal in one directory (``<dir>/current/<hex id>.txn``) with its writer thread."""

    def __init__(self, directory: Path, settings: JournalSettings) -> None:
        self.current_dir = directory / "current"
        self.settings = settings
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._fd = -1
        self._log_id = 0
        self._position = 0
        self._allocated = 0
        self._written = LogMark(0, 0)
        self._written_lock = threading.Lock()
        self._failure: BaseException | None = None
        self._force_requested = False
        self._closed = False
        self.bytes_written = 0
        self.syncs = 0

    # --- lifecycle
    def start(self) -> None:
        self.current_dir.mkdir(parents=True, exist_ok=True)
        self._open_new_file(max([*self.journal_ids(), int(time.time() * 1000)]) + 1)
        self._thread = threading.Thread(target=self._run, name=f"journal-{self.current_dir.parent.name}",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Write what is queued, fsync, stop the thread. Pending futures are completed first."""
        if self._thread is None or self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def journal_ids(self) -> list[int]:
        ids = (jf.parse_journal_file_name(p.name) for p in self.current_dir.glob("*.txn"))
        return sorted(i for i in ids if i is not None)

    # --- appends (event loop side)
    def append(self, payload: bytes) -> asyncio.Future[None]:
        """Queue a record; the future completes once it is durable (or written, without journalSyncData)."""
        if self._closed:
            raise StorageClosedError("journal is closed")
        if self._failure is not None:
            raise StorageIOError(f"journal failed earlier: {self._failure!r}")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queue.put((payload, (loop, fut)))  # framed by the writer thread, off the event loop
        return fut

    def barrier(self) -> asyncio.Future[None]:
        """Completes when everything queued before it is durable (forceLedger)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queue.put((None, (loop, fut)))
        return fut

    def written_mark(self) -> LogMark:
        """Everything before this mark is on disk (written, and fsynced when syncData is on)."""
        with self._written_lock:
            return self._written

    # --- writer thread
    def _run(self) -> None:
        pending: list[_Waiter] = []
        buf = bytearray()
        stop = False
        while not stop:
            item = self._queue.get()
            first_at = time.monotonic()
            stop = self._take(item, buf, pending)
            while not stop and not self._group_full(buf, pending):
                remaining = self.settings.max_group_wait_s - (time.monotonic() - first_at)
                try:
                    item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                stop = self._take(item, buf, pending)
            self._flush(buf, pending)
            buf.clear()
            pending = []

    def _take(self, item: object, buf: bytearray, pending: list[_Waiter]) -> bool:
        if item is _STOP:
            return True
        payload, waiter = cast(tuple[bytes | None, _Waiter], item)
        if payload is None:
            self._force_requested = True  # a barrier: fsync even without journalSyncData
        else:
            buf += _LENGTH.pack(len(payload))  # the record: length, then the payload (``jf.frame``)
            buf += payload
        pending.append(waiter)
        return False

    def _group_full(self, buf: bytearray, pending: list[_Waiter]) -> bool:
        s = self.settings
        if len(buf) >= s.buffered_writes_threshold:
            return True
        return 0 < s.buffered_entries_threshold <= len(pending)

    def _flush(self, buf: bytearray, pending: list[_Waiter]) -> None:
        error: BaseException | None = None
        try:
            if buf:
                self._write(buf)
            if self.settings.sync_data or self._force_requested:
                os.fdatasync(self._fd)
                self.syncs += 1
                self._force_requested = False
            with self._written_lock:
                self._written = LogMark(self._log_id, self._position)
            if self._position > self.settings.max_size_bytes:
                self._roll()
        except OSError as exc:
            log.error("journal write failed in %s: %r", self.current_dir, exc)
            self._failure = error = exc
        # One wake-up of each event loop per group (not one per record): the loop completes the whole group.
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for loop, fut in pending:
            by_loop.setdefault(loop, []).append(fut)
        for loop, futures in by_loop.items():
            try:
                loop.call_soon_threadsafe(_complete_all, futures, error)
            except RuntimeError:  # that loop is closed: nobody is waiting any more
                pass

    def _write(self, buf: bytearray) -> None:
        buf += jf.group_trailer(self._position + len(buf), self.settings.alignment, buf)
        self._ensure_allocated(self._position + len(buf))
        written = os.pwrite(self._fd, buf, self._position)
        if written != len(buf):
            raise OSError(f"short journal write: {written} of {len(buf)} bytes")
        self._position += len(buf)
        self.bytes_written += len(buf)

    def _ensure_allocated(self, upto: int) -> None:
        # Zero-filled preallocation: a reader stops at the first zero length, and the file size does not
        # change on every group commit, so fdatasync need not write inode metadata.
        while upto > self._allocated:
            os.posix_fallocate(self._fd, self._allocated, self.settings.prealloc_bytes)
            self._allocated += self.settings.prealloc_bytes

    def _open_new_file(self, log_id: int) -> None:
        path = self.current_dir / jf.journal_file_name(log_id)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        header = jf.encode_header(self.settings.format_version)
        os.pwrite(fd, header, 0)
        os.fsync(fd)
        _fsync_dir(self.current_dir)
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self._log_id, self._position, self._allocated = fd, log_id, len(header), len(header)
        with self._written_lock:
            self._written = LogMark(log_id, self._position)

    def _roll(self) -> None:
        os.fsync(self._fd)
        self._open_new_file(self._log_id + 1)

    # --- after a checkpoint
    def delete_before(self, mark: LogMark) -> list[int]:
        """Delete journal files older than ``mark`` beyond the ``journalMaxBackups`` newest of them."""
        older = [i for i in self.journal_ids() if i < mark.log_id]
        doomed = older[:max(0, len(older) - self.settings.max_backups)]
        for log_id in doomed:
            (self.current_dir / jf.journal_file_name(log_id)).unlink(missing_ok=True)
        return doomed


def _complete_all(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    if error is None:
        for fut in futures:
            if not fut.done():
                fut.set_result(None)
        return
    for fut in futures:
        if not fut.done():
            fut.set_exception(StorageIOError(f"journal write failed: {error!r}"))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replay_records(journal_dir: Path, mark: LogMark) -> Iterator[tuple[LogMark, jf.JournalRecord]]:
    """Journal records after ``mark`` in order, from every journal file not older than it (start-up replay)."""
    current = journal_dir / "current"
    ids = sorted(i for i in (jf.parse_journal_file_name(p.name) for p in current.glob("*.txn")) if i is not None)
    for log_id in ids:
        if log_id < mark.log_id:
            continue
        data = (current / jf.journal_file_name(log_id)).read_bytes()
        try:
            version = jf.decode_header(data)
        except jf.CorruptJournal as exc:
            raise StorageIOError(f"journal {log_id:x}.txn: {exc}") from None
        del version
        start = mark.offset if log_id == mark.log_id and mark.offset >= jf.HEADER_SIZE else jf.HEADER_SIZE
        try:
            for record in jf.iter_journal(data, start):
                yield LogMark(log_id, record.end), record
        except jf.CorruptJournal as exc:
            raise StorageIOError(f"journal {log_id:x}.txn: {exc}") from None
