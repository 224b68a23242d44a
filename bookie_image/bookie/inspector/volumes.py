"""Another bookie's ledger directories, read from beside it: the entry logs on disk and which ledgers each holds.

The bookie next to the inspector (an Apache BookKeeper bookie, usually) owns these directories: it appends to
its active log, finalizes and rolls it, compacts and deletes logs whenever it likes, and must never notice the
inspector. So nothing here writes, locks (no ``flock``: BookKeeper's GC must not wait for us) or keeps a file
open past one read: a log deleted between the listing and the read is simply gone, and a descriptor opened for
one read keeps the bytes of a log deleted meanwhile (POSIX) until it is closed right after.

What each log holds comes from its ledgers map when it has one (a finalized log, read once: BookKeeper never
rewrites one), else from a scan of its records, paced by a byte throttle (``compactionReadRateByBytes``). A scan
stops at the last whole record (the bookie may be writing the next one) and resumes from there next time, so
the active log costs only what it grew by. A log that cannot be read is reported with the reason, and the rest
of the directory still is.

Every method blocks on the disk: call it from a worker thread.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from bookie.storage import entrylog_format as ef
from bookie.storage.log_files import HeldLog, LogFileInfo, NoSuchLogError
from bookie.storage.logmeta import LogMeta, Throttle, iter_log_records, read_meta

log = logging.getLogger(__name__)


class VolumeMissing(Exception):
    """A ledger directory the inspector was told to read is not there, or not readable (the message says which)."""


@dataclass
class InspectedLog:
    """One entry log as the last look found it."""

    log_id: int
    path: Path
    size: int
    mtime: float
    meta: LogMeta | None         # None: unreadable
    unreadable: str | None       # why not
    active: bool                 # no ledgers map and no finalized log after it: the bookie appends to it


@dataclass
class _Scan:
    """How far an unfinalized log was scanned: resumed from ``end`` while the file is the same (inode)."""

    inode: int
    end: int
    ledgers: dict[int, int]


class LedgerVolume:
    """One ledger directory of the bookie beside us (``<dir>/current/<hex>.log``), read-only."""

    def __init__(self, ledger_dir: Path, index: int) -> None:
        self.ledger_dir = ledger_dir
        self.index = index
        self.current = ledger_dir / "current"
        self._finalized: dict[int, tuple[int, LogMeta]] = {}   # log id -> (inode, metadata from its map)
        self._scans: dict[int, _Scan] = {}

    def check(self) -> None:
        """Raises ``VolumeMissing`` unless the directory can be listed."""
        try:
            os.listdir(self.current)
        except FileNotFoundError:
            raise VolumeMissing(f"ledger directory {self.current} does not exist: is the bookie's ledger volume "
                                "mounted here?") from None
        except OSError as exc:
            raise VolumeMissing(f"ledger directory {self.current} cannot be read: {exc.strerror}") from None

    def log_ids(self) -> list[int]:
        self.check()
        ids = (ef.parse_log_file_name(name) for name in os.listdir(self.current))
        return sorted(i for i in ids if i is not None)

    def path_of(self, log_id: int) -> Path:
        return self.current / ef.log_file_name(log_id)

    def inspect(self, throttle: Throttle) -> list[InspectedLog]:
        """Every log on disk now, with what it holds (see the module docstring). Raises ``VolumeMissing``."""
        found: list[InspectedLog] = []
        for log_id in self.log_ids():
            inspected = self._inspect(log_id, throttle)
            if inspected is not None:
                found.append(inspected)
        on_disk = {i.log_id for i in found}
        self._finalized = {k: v for k, v in self._finalized.items() if k in on_disk}
        self._scans = {k: v for k, v in self._scans.items() if k in on_disk}
        newest_finalized = max((i.log_id for i in found if i.meta is not None and not i.meta.from_scan),
                               default=-1)
        for i in found:
            i.active = i.unreadable is None and i.meta is not None and i.meta.from_scan \
                and i.log_id > newest_finalized
        return found

    def _inspect(self, log_id: int, throttle: Throttle) -> InspectedLog | None:
        path = self.path_of(log_id)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None  # deleted by the bookie since the listing
        try:
            st = os.fstat(fd)
            meta, why = self._meta(fd, st, log_id, path, throttle)
        finally:
            os.close(fd)
        return InspectedLog(log_id, path, st.st_size, st.st_mtime, meta, why, active=False)

    def _meta(self, fd: int, st: os.stat_result, log_id: int, path: Path,
              throttle: Throttle) -> tuple[LogMeta | None, str | None]:
        known = self._finalized.get(log_id)
        if known is not None and known[0] == st.st_ino:
            return _fresh(known[1], st), None
        if st.st_size < ef.HEADER_SIZE:  # created, header not written yet: nothing in it
            return LogMeta(log_id, 0, {}, st.st_size, st.st_mtime, from_scan=True), None
        try:
            header = ef.LogHeader.decode(os.pread(fd, ef.HEADER_SIZE, 0))
        except ef.CorruptRecord as exc:
            return None, f"bad header: {exc.reason}"
        if header.has_ledgers_map:
            self._scans.pop(log_id, None)
            try:
                meta = read_meta(path, log_id, throttle)
            except FileNotFoundError:
                return None, "deleted while it was read"
            except Exception as exc:  # CorruptLog and anything the format code raises: this log only
                return None, str(getattr(exc, "reason", exc))
            if not meta.from_scan:
                self._finalized[log_id] = (st.st_ino, meta)
            return meta, None
        return self._scan(fd, st, log_id, throttle)

    def _scan(self, fd: int, st: os.stat_result, log_id: int,
              throttle: Throttle) -> tuple[LogMeta | None, str | None]:
        scan = self._scans.get(log_id)
        if scan is None or scan.inode != st.st_ino or scan.end > st.st_size:
            scan = _Scan(st.st_ino, ef.HEADER_SIZE, {})
        try:
            for offset, rec in iter_log_records(fd, st.st_size, throttle, start=scan.end):
                scan.ledgers[rec.ledger_id] = scan.ledgers.get(rec.ledger_id, 0) + rec.size + ef.RECORD_SIZE_PREFIX
                scan.end = offset + ef.RECORD_SIZE_PREFIX + rec.size
        except ef.CorruptRecord as exc:
            self._scans.pop(log_id, None)
            return None, f"record at offset {exc.offset} is corrupt: {exc.reason}"
        self._scans[log_id] = scan
        ledgers = dict(scan.ledgers)
        return LogMeta(log_id, sum(ledgers.values()), ledgers, st.st_size, st.st_mtime, from_scan=True,
                       first_ledgers=len(ledgers)), None

    # -- entry-log files for the audit (``bookie.log_reads.EntryLogReads`` reads through these)

    def file_infos(self) -> list[LogFileInfo]:
        ids = self.log_ids()
        newest_finalized = max((i for i in self._finalized if i in set(ids)), default=-1)
        infos = []
        for log_id in ids:
            try:
                st = self.path_of(log_id).stat()
            except FileNotFoundError:
                continue
            active = log_id > newest_finalized and not _has_map(self.path_of(log_id))
            infos.append(LogFileInfo(self.index, self.ledger_dir, log_id, st.st_size, st.st_mtime_ns, active))
        return infos


def _fresh(meta: LogMeta, st: os.stat_result) -> LogMeta:
    """A copy of remembered metadata (callers drop dead ledgers from theirs) with the file's current stat."""
    return LogMeta(meta.log_id, meta.total_bytes, dict(meta.ledgers), st.st_size, st.st_mtime,
                   first_ledgers=meta.first_ledgers, read_at=meta.read_at)


def _has_map(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return ef.LogHeader.decode(f.read(ef.HEADER_SIZE)).has_ledgers_map
    except (OSError, ef.CorruptRecord):
        return False


class LedgerVolumes:
    """Every ledger directory of the bookie beside us; the entry-log files API the admin routes read
    (``bookie.storage.log_files.LogFileSource``), without locks."""

    def __init__(self, ledger_dirs: list[Path]) -> None:
        self.volumes = [LedgerVolume(d, i) for i, d in enumerate(ledger_dirs)]

    def check(self) -> None:
        for v in self.volumes:
            v.check()

    def log_files(self) -> list[LogFileInfo]:
        return [info for v in self.volumes for info in v.file_infos()]

    def open_log_file(self, dir_index: int, log_id: int) -> HeldLog:
        if not 0 <= dir_index < len(self.volumes):
            raise NoSuchLogError(dir_index, log_id, f"cannot exist: the inspected bookie has {len(self.volumes)} "
                                 "ledger directories")
        return HeldLog(self.volumes[dir_index].path_of(log_id), dir_index, log_id, lock=False)
