"""Entry logs as files, for readers outside the engine (the admin API's entry-log reads, ``bookie entrylog
dump``, a backup): what is on disk, and reads that hold the log while they run.

A reader holds a shared ``flock`` on its own open file description for as long as it reads. GC's
reference-counted deletion (``bookie.gc.refs``) does not unlink a retired log while anyone holds such a lock,
until the log's forced-destroy interval (``gcEntryLogForcedDestroyIntervalMs``) is over; after that the log is
unlinked anyway and the reader's descriptor keeps reading the same bytes (POSIX), so a slow reader delays
reclamation but cannot block it. ``flock`` locks belong to open file descriptions, so a lock taken in the
bookie's own process counts exactly like one taken by another process.

Every method blocks on the disk; call it from a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from bookie.storage import entrylog_format as ef
from bookie.storage.errors import StorageError
from bookie.storage.ledger_dir import LedgerDirStorage

T = TypeVar("T")


class NoSuchLogError(StorageError):
    """No entry log of that id in that ledger directory (never written, or deleted by GC)."""

    def __init__(self, dir_index: int, log_id: int, why: str = "does not exist") -> None:
        super().__init__(f"entry log {ef.log_file_name(log_id)} of ledger directory {dir_index} {why}")
        self.dir_index = dir_index
        self.log_id = log_id


@dataclass(frozen=True, slots=True)
class LogFileInfo:
    """One entry-log file as ``stat`` sees it."""

    dir_index: int
    ledger_dir: Path
    log_id: int
    size: int
    mtime_ns: int
    active: bool  # the log checkpoints append to: it grows, and has no ledgers map yet

    @property
    def path(self) -> Path:
        return self.ledger_dir / "current" / ef.log_file_name(self.log_id)


class HeldLog:
    """An entry log opened for reading under a shared ``flock``: GC does not delete it until ``close``
    (or until its forced-destroy interval is over). ``size`` is the size when it was opened.

    ``lock=False`` for a log another bookie owns (the inspector's): no lock, the descriptor alone keeps the
    bytes of a log deleted meanwhile until ``close``."""

    def __init__(self, path: Path, dir_index: int, log_id: int, lock: bool = True) -> None:
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise NoSuchLogError(dir_index, log_id) from None
        try:
            if lock:
                fcntl.flock(self._fd, fcntl.LOCK_SH)
            st = os.fstat(self._fd)
        except BaseException:
            os.close(self._fd)
            raise
        self.path = path
        self.size = st.st_size
        self.mtime_ns = st.st_mtime_ns

    def pread(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset`` (fewer only at the end of the file)."""
        out = bytearray()
        while len(out) < length:
            chunk = os.pread(self._fd, length - len(out), offset + len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # drops the lock
            self._fd = -1

    def __enter__(self) -> HeldLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LogFileSource(Protocol):
    """Entry-log files for readers outside a storage engine: ``StorageEngine`` (through ``LogFilesApi``), or the
    inspector's read-only view of another bookie's directories."""

    def log_files(self) -> list[LogFileInfo]: ...
    def open_log_file(self, dir_index: int, log_id: int) -> HeldLog: ...


class LogFilesApi:
    """Mixed into ``StorageEngine``: its entry-log files, for readers outside it (see the module docstring)."""

    dirs: list[LedgerDirStorage]

    def log_files(self) -> list[LogFileInfo]:
        """Every ``<hex>.log`` of every ledger directory, by directory and id. Blocking (``stat``)."""
        found: list[LogFileInfo] = []
        for index, d in enumerate(self.dirs):
            ids, active = d.entry_logger.snapshot_ids()
            for log_id in ids:
                try:
                    st = d.entry_logger.path_of(log_id).stat()
                except FileNotFoundError:  # deleted by GC since the listing
                    continue
                found.append(LogFileInfo(index, d.ledger_dir, log_id, st.st_size, st.st_mtime_ns,
                                         log_id == active))
        return found

    def open_log_file(self, dir_index: int, log_id: int) -> HeldLog:
        """The log, held against deletion until the returned object is closed. Raises ``NoSuchLogError``."""
        if not 0 <= dir_index < len(self.dirs):
            raise NoSuchLogError(dir_index, log_id, f"cannot exist: this bookie has {len(self.dirs)} "
                                 "ledger directories")
        return HeldLog(self.dirs[dir_index].entry_logger.path_of(log_id), dir_index, log_id)


def held_by_other_process(path: Path) -> bool:
    """True when another open file description holds a ``flock`` on ``path`` (a reader's shared lock)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops our lock too
    return False


def entry_log_files(ledger_dir: Path) -> list[tuple[int, Path]]:
    """(log id, path) of the entry logs of a ledger directory, oldest first."""
    current = ledger_dir / "current"
    if not current.is_dir():
        raise FileNotFoundError(f"{current}: no such directory (a ledger directory holds current/<id>.log)")
    return sorted((log_id, path) for path in current.iterdir()
                  if (log_id := ef.parse_log_file_name(path.name)) is not None)


def scan_records(path: Path, problems: list[str],
                 look: Callable[[memoryview], T]) -> Iterator[tuple[int, int, int, T]]:
    """(offset of the record, ledger id, entry id, ``look(entry bytes)``) of each record of the entry log at
    ``path``, read through a map of the file under a shared hold, up to its ledgers map or its first damaged record
    (said in ``problems``; the records after it are not read). A log deleted since it was listed has none. The entry
    bytes are a view of the map, valid only inside ``look``: the map closes when the scan ends."""
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(shared_hold(path))
        except FileNotFoundError:
            return
        if os.fstat(fd).st_size <= ef.HEADER_SIZE:
            return  # no record yet: a log created ahead of its use (Apache BookKeeper's) or cut before its first
        data = stack.enter_context(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
        view = stack.enter_context(memoryview(data))
        records = ef.iter_records(view)
        try:
            for record in records:
                found = (record.offset, record.ledger_id, record.entry_id, look(record.data))
                del record  # its view of the map must be gone before the map closes
                yield found
        except ef.CorruptRecord as exc:
            problems.append(f"{path}: {exc} (the records after it were not read)")
        finally:
            records.close()


@contextlib.contextmanager
def shared_hold(path: Path) -> Iterator[int]:
    """For readers in other processes: an fd with a shared ``flock`` that delays GC's deletion of the log."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield fd
    finally:
        os.close(fd)
