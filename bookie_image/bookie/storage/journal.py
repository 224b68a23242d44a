"""The journal: every add, fence and LAC is appended here and made durable before it is acknowledged.

One writer thread per journal directory does group commit: it takes everything queued, writes it in one go,
fsyncs once and hands the whole group back to the event loop, which completes it in one step. The thread is
``_write_path.JournalWriter`` (C): it never takes the GIL, so a group commit never waits behind the event loop,
and the adds the request hot path stores (``_write_path.WritePath``) are completed without a Python object per
entry. Records appended from Python (fences, master keys, explicit LACs, the adds of the general path) complete
a future, with the rest of their group. ``written_mark`` tells how far the journal is
written, so that after the write cache is flushed to entry logs the older journal files can be deleted
(``LogMark``): on a thread of the journal's own, in steps (``gradual_removal``), so that neither the checkpoint
nor the fsyncs of the journals sharing the disk wait for a file of gigabytes to be freed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bookie import failpoints
from bookie.stats import JournalStats
from bookie.storage import durable
from bookie.storage import journal_format as jf
from bookie.storage._write_path import JournalWriter
from bookie.storage.errors import StorageClosedError, StorageIOError
from bookie.storage.gradual_removal import remove_in_steps

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
    remove_from_page_cache: bool = True  # journalRemoveFromPageCache
    max_size_bytes: int = 2048 * 1024 * 1024
    prealloc_bytes: int = 16 * 1024 * 1024
    alignment: int = 512
    format_version: int = jf.FORMAT_V6
    max_backups: int = 5
    statistics: bool = True  # enableStatistics: record the journal's latency summaries


class Journal:
    """Append-only journal in one directory (``<dir>/current/<hex id>.txn``) with its writer thread."""

    def __init__(self, directory: Path, settings: JournalSettings,
                 on_failure: Callable[[BaseException], None] | None = None) -> None:
        self.current_dir = directory / "current"
        self.settings = settings
        # Called once, on the event loop, when a write or fsync fails: the journal can no longer make anything
        # durable, and the bookie must stop (fail-stop) rather than go on refusing every add.
        self._on_failure = on_failure
        self.writer = JournalWriter(
            str(self.current_dir), jf.encode_header(settings.format_version), settings.max_group_wait_s,
            settings.buffered_writes_threshold, settings.buffered_entries_threshold,
            settings.flush_when_queue_empty, settings.sync_data, settings.max_size_bytes, settings.prealloc_bytes,
            settings.alignment, failpoints.countdown("journal.fsync"), settings.remove_from_page_cache)
        self.writer.on_python_records = _complete_all
        self.stats = JournalStats(settings.statistics)
        self.writer.on_group = self.stats.group
        self.writer.on_failure = self._failed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._detached = threading.Event()
        # Old files are removed on a thread of their own, one removal at a time; a mark given while one runs
        # waits in _removal_mark (the newest only), so nothing queues up behind a slow disk.
        self._removal = ThreadPoolExecutor(1, thread_name_prefix="journal-removal")
        self._removal_lock = threading.Lock()
        self._removal_mark: LogMark | None = None
        self._removal_running = False
        self._removal_stop = threading.Event()

    # --- lifecycle
    def start(self) -> None:
        """Open a new journal file and start the writer; its groups complete on the running event loop."""
        durable.make_dirs(self.current_dir)
        self.writer.start(max([*self.journal_ids(), int(time.time() * 1000)]) + 1)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.writer.wake_fd, self.writer.complete)

    def close(self) -> None:
        """Write what is queued, fsync, stop the thread; its last groups complete on the event loop (this may
        run on another thread: ``await asyncio.to_thread(journal.close)``)."""
        if self._loop is None or self._closed:
            return
        with self._removal_lock:  # no removal is started after this
            self._closed = True
        self._removal_stop.set()  # a removal under way stops after its current step; the next start redoes it
        self._removal.shutdown(wait=True)
        self.writer.stop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._detach()
            return
        try:
            self._loop.call_soon_threadsafe(self._detach)
        except RuntimeError:  # that loop is closed: nobody waits for the last groups any more
            self.writer.close_wake_fd()
            return
        self._detached.wait(10)

    def _detach(self) -> None:
        assert self._loop is not None
        self.writer.complete()
        with contextlib.suppress(Exception):  # the loop may be closing already
            self._loop.remove_reader(self.writer.wake_fd)
        self.writer.close_wake_fd()
        self._detached.set()

    def _failed(self, error: BaseException) -> None:
        log.error("journal write failed in %s: %r", self.current_dir, error)
        if self._on_failure is not None:
            self._on_failure(error)

    def journal_ids(self) -> list[int]:
        ids = (jf.parse_journal_file_name(p.name) for p in self.current_dir.glob("*.txn"))
        return sorted(i for i in ids if i is not None)

    # --- appends (event loop side)
    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosedError("journal is closed")
        failure = self.writer.failure
        if failure is not None:
            raise StorageIOError(f"journal failed earlier: {failure}")

    def append(self, payload: bytes) -> asyncio.Future[None]:
        """Queue a record; the future completes once it is durable (or written, without journalSyncData)."""
        self._check_open()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.writer.append(payload, fut)
        return fut

    def barrier(self) -> asyncio.Future[None]:
        """Completes when everything queued before it is durable (forceLedger)."""
        self._check_open()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.writer.barrier(fut)
        return fut

    def queue_size(self) -> int:
        """Records queued and not yet taken by the writer thread."""
        return self.writer.queue_size()

    def written_mark(self) -> LogMark:
        """Everything before this mark is on disk (written, and fsynced when syncData is on)."""
        return LogMark(*self.writer.written_mark())

    @property
    def syncs(self) -> int:
        return self.writer.syncs

    @property
    def bytes_written(self) -> int:
        return self.writer.bytes_written

    @property
    def syncing(self) -> int:
        """Records of the group being fsynced now: BookKeeper's force-write queue."""
        return self.writer.syncing

    # --- after a checkpoint
    def delete_before(self, mark: LogMark) -> None:
        """Have the journal files older than ``mark`` beyond the ``journalMaxBackups`` newest of them removed,
        and return at once: the removal runs on this journal's removal thread, each file in steps. A checkpoint
        must not wait for it: under 16 KiB adds a write cache half fills in less time than freeing a 2 GiB file
        takes, and adds would wait for the next checkpoint meanwhile."""
        with self._removal_lock:
            if self._closed:
                return
            self._removal_mark = mark
            if self._removal_running:
                return
            self._removal_running = True
        self._removal.submit(self._remove_old_files)

    def files_to_delete(self, mark: LogMark) -> list[int]:
        """The ids of the journal files older than ``mark`` beyond the ``journalMaxBackups`` newest of them."""
        older = [i for i in self.journal_ids() if i < mark.log_id]
        return older[:max(0, len(older) - self.settings.max_backups)]

    def _remove_old_files(self) -> None:
        """Removal thread: remove what the newest mark dooms, again while newer marks came meanwhile."""
        while True:
            with self._removal_lock:
                mark, self._removal_mark = self._removal_mark, None
                if mark is None or self._removal_stop.is_set():
                    self._removal_running = False
                    return
            try:
                for log_id in self.files_to_delete(mark):
                    if not remove_in_steps(self.current_dir / jf.journal_file_name(log_id), self._removal_stop):
                        break
            except OSError as exc:  # tried again after the next checkpoint; the journal itself is not affected
                log.error("removing old journal files in %s failed: %r", self.current_dir, exc)


def _complete_all(waiters: list[asyncio.Future[None]], error: BaseException | None) -> None:
    """The records appended from Python of one group: their futures completed (the request hot path's adds are
    completed by the writer's ``complete`` itself)."""
    for waiter in waiters:
        if waiter.done():
            continue
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(StorageIOError(f"journal write failed: {error!r}"))


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
