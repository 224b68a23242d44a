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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import cast

from bookie import failpoints
from bookie.stats import JournalStats
from bookie.storage import durable
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
    flush_when_queue_empty: bool = False
    sync_data: bool = True
    max_size_bytes: int = 2048 * 1024 * 1024
    prealloc_bytes: int = 16 * 1024 * 1024
    alignment: int = 512
    format_version: int = jf.FORMAT_V6
    max_backups: int = 5
    statistics: bool = True  # enableStatistics: record the journal's latency summaries


_STOP = object()
_LENGTH = struct.Struct(">i")
# The shortest sleep of an open group's writer before it takes everything queued meanwhile at once (``_pause``).
_GROUP_POLL_S = 0.00025
# Told when its record is durable: None, or the write's error.
Durable = Callable[[BaseException | None], None]
# Who waits for a record: a future, or (hot add path) a plain callback, which costs no future and no
# per-record loop callback.
_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None] | Durable"]


class Journal:
    """Append-only journal in one directory (``<dir>/current/<hex id>.txn``) with its writer thread."""

    def __init__(self, directory: Path, settings: JournalSettings,
                 on_failure: Callable[[BaseException], None] | None = None) -> None:
        self.current_dir = directory / "current"
        self.settings = settings
        # Called once, on the writer thread, when a write or fsync fails: the journal can no longer make
        # anything durable, and the bookie must stop (fail-stop) rather than go on refusing every add.
        self._on_failure = on_failure
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
        self.stats = JournalStats(settings.statistics)

    # --- lifecycle
    def start(self) -> None:
        durable.make_dirs(self.current_dir)
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

    def append_then(self, payload: bytes, durable: Durable) -> None:
        """``append`` for the hot path: ``durable(None)`` (or ``durable(error)``) is called on the event loop
        once the record is durable, together with the rest of its group, in one loop callback."""
        if self._closed:
            raise StorageClosedError("journal is closed")
        if self._failure is not None:
            raise StorageIOError(f"journal failed earlier: {self._failure!r}")
        self._queue.put((payload, (asyncio.get_running_loop(), durable)))

    def barrier(self) -> asyncio.Future[None]:
        """Completes when everything queued before it is durable (forceLedger)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queue.put((None, (loop, fut)))
        return fut

    def queue_size(self) -> int:
        """Records queued and not yet taken by the writer thread."""
        return self._queue.qsize()

    def written_mark(self) -> LogMark:
        """Everything before this mark is on disk (written, and fsynced when syncData is on)."""
        with self._written_lock:
            return self._written

    # --- writer thread
    def _run(self) -> None:
        stop = False
        while not stop:
            items = [self._queue.get()]  # blocks, GIL released, until there is work
            try:
                stop = self._group(items)
            except Exception as exc:  # a defect here must fail the waiters loudly, never leave them hanging
                log.exception("journal writer failed in %s", self.current_dir)
                self._fail(exc)
                self._complete([item[1] for item in items if isinstance(item, tuple)], exc)
                stop = _STOP in items

    def _fail(self, exc: BaseException) -> None:
        first = self._failure is None
        self._failure = exc
        if first and self._on_failure is not None:
            try:
                self._on_failure(exc)
            except Exception:
                log.exception("journal failure callback failed")

    def _group(self, items: list[object]) -> bool:
        """Gather one group commit after its first record, write it; True once asked to stop."""
        first_at, taken_at = time.monotonic(), time.perf_counter()
        size = self._take_queued(items)
        while _STOP not in items and not self._group_done(items, size, first_at):
            # Sleep rather than wait on the queue: a wait would wake this thread, and take the GIL from the
            # event loop, for every record; this way the loop runs undisturbed and the group is taken in one go.
            pause = self._pause(items, size, first_at)
            if pause > 0:
                time.sleep(pause)
            size = self._take_queued(items, size)
        stop = _STOP in items
        if stop:
            del items[items.index(_STOP):]
        if items:
            buf, pending = self._frame(cast(list[tuple[bytes | None, _Waiter]], items))
            self._flush(buf, pending, taken_at)
        return stop

    def _pause(self, items: list[object], size: int, first_at: float) -> float:
        """How long to sleep before taking the queue again: the rest of the group's time, or, when records come
        fast enough to reach a size threshold first, about until then (one poll slice at least). Each wake-up
        takes the GIL from the event loop, so a slow stream of records is not polled for nothing."""
        s = self.settings
        elapsed = time.monotonic() - first_at
        remaining = s.max_group_wait_s - elapsed
        if remaining <= 0:
            return 0.0
        if elapsed <= 0 or not size:
            return min(remaining, _GROUP_POLL_S)   # no rate known yet
        until = (s.buffered_writes_threshold - size) * elapsed / size
        if s.buffered_entries_threshold > 0:
            until = min(until, (s.buffered_entries_threshold - len(items)) * elapsed / len(items))
        return min(remaining, max(until, _GROUP_POLL_S))

    def _take_queued(self, items: list[object], size: int = 0) -> int:
        """Move whatever is queued now into ``items``; returns the payload bytes taken so far."""
        if size == 0:
            size = sum(len(item[0] or b"") for item in items if isinstance(item, tuple))
        get = self._queue.get_nowait
        try:
            while True:
                item = get()
                items.append(item)
                if isinstance(item, tuple) and item[0] is not None:
                    size += len(item[0])
        except queue.Empty:
            return size

    def _group_done(self, items: list[object], size: int, first_at: float) -> bool:
        s = self.settings
        return (s.flush_when_queue_empty  # the queue was just drained
                or time.monotonic() - first_at >= s.max_group_wait_s
                or size >= s.buffered_writes_threshold
                or 0 < s.buffered_entries_threshold <= len(items))

    def _frame(self, items: list[tuple[bytes | None, _Waiter]]) -> tuple[bytearray, list[_Waiter]]:
        """The group's records (length, then payload: ``jf.frame``), built by C-level iteration only."""
        payloads, waiters = zip(*items, strict=True)
        if None in payloads:  # a barrier: fsync even without journalSyncData
            self._force_requested = True
            payloads = tuple(p for p in payloads if p is not None)
        records = chain.from_iterable(zip(map(_LENGTH.pack, map(len, payloads)), payloads, strict=True))
        return bytearray().join(records), list(waiters)

    def _flush(self, buf: bytearray, pending: list[_Waiter], taken_at: float) -> None:
        if self._failure is not None:
            # Never write or acknowledge after a failure: a later fsync may succeed although the pages of the
            # failed one were dropped (Linux reports a writeback error once), so "durable" could be a lie.
            self._complete(pending, self._failure)
            return
        error: BaseException | None = None
        nbytes, written_at, synced = len(buf), taken_at, False
        try:
            if buf:
                self._write(buf)
            written_at = time.perf_counter()
            if self.settings.sync_data or self._force_requested:
                self.stats.syncing = len(pending)
                os.fdatasync(self._fd)
                failpoints.io_error("journal.fsync")
                self.syncs += 1
                self._force_requested = False
                synced = True
            with self._written_lock:
                self._written = LogMark(self._log_id, self._position)
            if self._position > self.settings.max_size_bytes:
                self._roll()
        except OSError as exc:
            log.error("journal write failed in %s: %r", self.current_dir, exc)
            error = exc
            self._fail(exc)
        self.stats.syncing = 0
        self._complete(pending, error)
        self.stats.group(len(pending), nbytes, taken_at, written_at, synced, error is None)

    @staticmethod
    def _complete(pending: list[_Waiter], error: BaseException | None) -> None:
        # One wake-up of each event loop per group (not one per record): the loop completes the whole group.
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None] | Durable]] = {}
        for loop, waiter in pending:
            by_loop.setdefault(loop, []).append(waiter)
        for loop, waiters in by_loop.items():
            try:
                loop.call_soon_threadsafe(_complete_all, waiters, error)
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


def _complete_all(waiters: list[asyncio.Future[None] | Durable], error: BaseException | None) -> None:
    for waiter in waiters:
        failure = None if error is None else StorageIOError(f"journal write failed: {error!r}")
        if isinstance(waiter, asyncio.Future):
            if waiter.done():
                continue
            if failure is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(failure)
            continue
        try:
            waiter(failure)
        except Exception:  # one broken waiter must not leave the rest of its group unanswered
            log.exception("journal completion callback failed")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class JournalDamage:
    """A damaged group before valid ones in a journal file: acknowledged records of it are lost here.

    ``kept`` is the copy (a hard link) of the whole journal file in ``<journalDir>/corrupt/``, which the
    journal's trimming after checkpoints never touches: the damaged bytes stay there for inspection.
    """

    file: str
    offset: int
    reason: str
    kept: str = ""

    def describe(self) -> str:
        return f"journal {self.file} damaged at offset {self.offset} ({self.reason}); kept as {self.kept}"


CORRUPT_DIR = "corrupt"
_DAMAGE_SUFFIX = ".damage"


def replay_records(journal_dir: Path, mark: LogMark,
                   damages: list[JournalDamage] | None = None) -> Iterator[tuple[LogMark, jf.JournalRecord]]:
    """Journal records after ``mark`` in order, from every journal file not older than it (start-up replay).

    A damaged group followed by valid ones raises ``StorageIOError`` naming the file and offset, or, when
    ``damages`` is given, is recorded there while the replay goes on with the valid groups after it.
    """
    current = journal_dir / "current"
    ids = sorted(i for i in (jf.parse_journal_file_name(p.name) for p in current.glob("*.txn")) if i is not None)
    for log_id in ids:
        if log_id < mark.log_id:
            continue
        path = current / jf.journal_file_name(log_id)
        data = path.read_bytes()
        try:
            version = jf.decode_header(data)
        except jf.CorruptJournal as exc:
            raise StorageIOError(f"journal {path.name}: {exc}") from None
        del version
        start = mark.offset if log_id == mark.log_id and mark.offset >= jf.HEADER_SIZE else jf.HEADER_SIZE
        found: list[jf.CorruptJournal] | None = [] if damages is not None else None
        try:
            for record in jf.iter_journal(data, start, found):
                yield LogMark(log_id, record.end), record
        except jf.CorruptJournal as exc:
            raise StorageIOError(f"journal {path.name}: {exc}") from None
        if damages is not None and found:
            damages += [JournalDamage(str(path), exc.offset, str(exc)) for exc in found]


def keep_damaged(damage: JournalDamage) -> JournalDamage:
    """Hard-link the damaged journal into ``<journalDir>/corrupt/`` with a note of where and why (durably), so
    that trimming the journal never deletes the evidence; returns the damage with ``kept`` set."""
    source = Path(damage.file)
    corrupt = source.parent.parent / CORRUPT_DIR
    durable.make_dirs(corrupt)
    kept = corrupt / source.name
    if not kept.exists():
        os.link(source, kept)
    note = corrupt / f"{source.name}.{damage.offset}{_DAMAGE_SUFFIX}"
    durable.write_file(note, f"{damage.offset}\n{damage.reason}\n".encode())
    durable.fsync_dir(corrupt)
    return JournalDamage(damage.file, damage.offset, damage.reason, str(kept))


def kept_damage(journal_dir: Path) -> list[JournalDamage]:
    """The damage kept in ``<journalDir>/corrupt/`` by this run or earlier ones."""
    corrupt = journal_dir / CORRUPT_DIR
    found = []
    for note in sorted(corrupt.glob(f"*{_DAMAGE_SUFFIX}")):
        name = note.name[:-len(_DAMAGE_SUFFIX)].rsplit(".", 1)[0]
        offset, _, reason = note.read_text().partition("\n")
        found.append(JournalDamage(str(journal_dir / "current" / name), int(offset), reason.strip(),
                                   str(corrupt / name)))
    return found
