"""Rebuilding a ledger directory's RocksDB indexes from its files, the bookie stopped: ``bookie index rebuild``.

An index lost or damaged beyond what RocksDB recovers leaves a disk the bookie refuses to serve
(``index_format.check_takeover``, ``index.RocksIndex``), although every entry is still in the entry logs. This
rebuilds it, with the result Apache BookKeeper's shell commands give, so a disk rebuilt by either can go to
either bookie:

- **locations** (``rebuild-db-ledger-locations-index``): every record of every entry log, oldest log first, of a
  ledger the ledgers index holds, at ``(logId << 32) | position of the entry``. A later copy of an entry (a
  compaction's, a recovery's second write) comes later in the scan, so it wins, as it did in the lost index.
  Entries of ledgers deleted since they were written are left out, as GC had removed them.
- **ledgers** (``rebuild-db-ledgers-index``): every ledger with an entry in an entry log or a record in a journal,
  each *fenced* and with an empty master key. Whether a ledger had been fenced cannot be read back from the files,
  and losing a fence would let a replaced writer add to a ledger that recovery closed; an empty master key is
  taken from the next request that brings one (``StorageEngine``). A ledger found only in the journals goes to
  the directory the bookie would give it (``ledgerId`` mod the number of directories).

The new index is written beside the old one (``<name>.TEMP-<time>``), then takes its place; the old one, if any, is
kept as ``<name>.BACKUP-<time>`` with its ``<name>.sequence`` file, never deleted. An entry log damaged part-way
gives up only what follows the damage, named in the report. A running bookie holds RocksDB's lock on its indexes:
the rebuild is refused then.

Everything here blocks on the disk; it runs in the ``bookie`` command, not in a serving bookie.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rocksdict import AccessType, Options, Rdict, WriteBatch, WriteOptions

from bookie.config import BookieConfig
from bookie.storage import durable, index_format
from bookie.storage import entrylog_format as ef
from bookie.storage import journal_format as jf
from bookie.storage.errors import StorageError
from bookie.storage.index import STORAGE_FLAGS_KEY, LedgerData, ledger_id_of_key
from bookie.storage.log_files import entry_log_files, scan_records

_LEDGER_KEY = struct.Struct(">q")
_LOCATION_KEY = struct.Struct(">qq")
_LOCATION = struct.Struct(">q")
WRITE_BATCH = 10_000  # puts per RocksDB write
# What a rebuilt ledgers index says of every ledger it finds (see the module docstring).
REBUILT_LEDGER = LedgerData(master_key=b"", fenced=True).encode()


class RebuildRefusedError(StorageError):
    """The rebuild cannot run on these directories as they are; nothing was changed."""


@dataclass
class RebuildReport:
    """What one directory's rebuild did, printed by ``bookie index rebuild``."""

    index: str
    path: str
    entry_logs: int = 0
    journals: int = 0
    ledgers: int = 0
    entries: int = 0
    previous: str | None = None  # where the old index was kept
    damaged: list[str] = field(default_factory=list)  # files read only up to a damaged record


def rebuild(conf: BookieConfig, name: str) -> list[RebuildReport]:
    """Rebuild index ``name`` (``locations`` or ``ledgers``) of every ledger directory of ``conf``."""
    if name not in index_format.INDEX_NAMES:
        raise RebuildRefusedError(f"no index named {name!r}: {' or '.join(index_format.INDEX_NAMES)}")
    pairs = list(zip(conf.ledger_directories, conf.effective_index_directories, strict=True))
    for _, index_dir in pairs:  # all checked before any is changed
        for index in index_format.INDEX_NAMES:
            _refuse_if_open(index_dir / "current" / index)
    if name == "locations":
        for _, index_dir in pairs:
            if not (index_dir / "current" / "ledgers").is_dir():
                raise RebuildRefusedError(
                    f"{index_dir / 'current' / 'ledgers'} does not exist: the location index keeps the entries of "
                    "the ledgers the ledgers index holds, so rebuild that one first (bookie index rebuild ledgers)")
        return [_rebuild_locations(ledger_dir, index_dir) for ledger_dir, index_dir in pairs]
    return _rebuild_ledgers(conf, pairs)


def _refuse_if_open(index: Path) -> None:
    """RocksDB holds a POSIX lock on ``<db>/LOCK`` while a process has the database open."""
    try:
        fd = os.open(index / "LOCK", os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EAGAIN):
            raise
        raise RebuildRefusedError(f"{index} is open in another process (a running bookie holds its lock): stop the "
                                  "bookie before rebuilding its indexes") from None
    finally:
        os.close(fd)  # closing any descriptor of the file drops this process's lock


def _rebuild_locations(ledger_dir: Path, index_dir: Path) -> RebuildReport:
    current = index_dir / "current"
    report = RebuildReport("locations", str(current / "locations"))
    active = _ledgers_in(current / "ledgers")
    report.ledgers = len(active)
    with _NewIndex(current, "locations") as new:
        for log_id, path in entry_log_files(ledger_dir):
            report.entry_logs += 1
            for ledger_id, entry_id, position in _scan_entry_log(path, report):
                if ledger_id in active:
                    new.put(_LOCATION_KEY.pack(ledger_id, entry_id),
                            _LOCATION.pack(ef.make_location(log_id, position)))
                    report.entries += 1
    report.previous = new.previous
    return report


def _rebuild_ledgers(conf: BookieConfig, pairs: list[tuple[Path, Path]]) -> list[RebuildReport]:
    reports = [RebuildReport("ledgers", str(index_dir / "current" / "ledgers")) for _, index_dir in pairs]
    found: list[set[int]] = []
    for (ledger_dir, _), report in zip(pairs, reports, strict=True):
        ledgers: set[int] = set()
        for _, path in entry_log_files(ledger_dir):
            report.entry_logs += 1
            ledgers.update(ledger_id for ledger_id, _, _ in _scan_entry_log(path, report))
        found.append(ledgers)
    in_some_log = set().union(*found)
    for ledger_id in _journal_ledgers(conf, reports):
        if ledger_id not in in_some_log:
            found[ledger_id % len(pairs)].add(ledger_id)
    for (_, index_dir), ledgers, report in zip(pairs, found, reports, strict=True):
        with _NewIndex(index_dir / "current", "ledgers") as new:
            for ledger_id in sorted(ledgers):
                new.put(_LEDGER_KEY.pack(ledger_id), REBUILT_LEDGER)
        report.ledgers = len(ledgers)
        report.previous = new.previous
    return reports


def _ledgers_in(index: Path) -> set[int]:
    """The ledger ids a ledgers index holds, read-only."""
    db = Rdict(str(index), Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        ledgers = set()
        it = db.iter()
        it.seek_to_first()
        while it.valid():
            ledger_id = ledger_id_of_key(it.key(), index)
            if ledger_id != STORAGE_FLAGS_KEY:
                ledgers.add(ledger_id)
            it.next()
        return ledgers
    finally:
        db.close()


def _scan_entry_log(path: Path, report: RebuildReport) -> Iterator[tuple[int, int, int]]:
    """(ledger id, entry id, position of the entry) of each record; a damaged one ends the log's scan."""
    for offset, ledger_id, entry_id, _ in scan_records(path, report.damaged, _nothing):
        yield ledger_id, entry_id, offset + ef.RECORD_SIZE_PREFIX


def _nothing(_: memoryview) -> None:
    return None


def _journal_ledgers(conf: BookieConfig, reports: list[RebuildReport]) -> set[int]:
    """Ledger ids of every journal record; damage is reported on the first directory's report."""
    ledgers: set[int] = set()
    for journal_dir in conf.journal_directories:
        current = journal_dir / "current"
        if not current.is_dir():
            continue
        for path in sorted(current.iterdir()):
            if jf.parse_journal_file_name(path.name) is None:
                continue
            reports[0].journals += 1
            data = path.read_bytes()
            damaged: list[jf.CorruptJournal] = []
            try:
                jf.decode_header(data)
                ledgers.update(record.ledger_id for record in jf.iter_journal(data, damaged=damaged))
            except jf.CorruptJournal as exc:
                damaged.append(exc)
            reports[0].damaged += [f"{path}: {exc}" for exc in damaged]
    return ledgers


class _NewIndex:
    """An index written at ``<name>.TEMP-<time>`` and put in place of ``<name>`` when the block ends without an
    error (the old one kept as ``<name>.BACKUP-<time>``); removed otherwise, the old one untouched."""

    def __init__(self, current: Path, name: str) -> None:
        self.current, self.name = current, name
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S.%fZ")
        self.temp = current / f"{name}.TEMP-{stamp}"
        self.backup = current / f"{name}.BACKUP-{stamp}"
        self.previous: str | None = None
        self._batch = WriteBatch(raw_mode=True)
        self._pending = 0

    def __enter__(self) -> _NewIndex:
        durable.make_dirs(self.current)
        self.db = Rdict(str(self.temp), index_format.options())
        unlogged = WriteOptions()
        unlogged.disable_wal = True  # type: ignore[method-assign,assignment]  # flushed whole at the end
        self.db.set_write_options(unlogged)
        return self

    def put(self, key: bytes, value: bytes) -> None:
        self._batch.put(key, value)
        self._pending += 1
        if self._pending >= WRITE_BATCH:
            self._write()

    def _write(self) -> None:
        self.db.write(self._batch)
        self._batch = WriteBatch(raw_mode=True)
        self._pending = 0

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            if exc_type is None:
                self._write()
                self.db.flush(True)  # the tables written and synced: no write-ahead log to replay
        finally:
            self.db.close()
        if exc_type is not None:
            for path in sorted(self.temp.iterdir()):
                path.unlink()
            self.temp.rmdir()
            return
        durable.fsync_dir(self.temp)
        index, sequence = self.current / self.name, self.current / f"{self.name}.sequence"
        if index.exists():
            index.rename(self.backup)
            self.previous = str(self.backup)
        if sequence.exists():  # the old index's sequence number: the new one counts from 0
            sequence.rename(self.current / f"{self.backup.name}.sequence")
        self.temp.rename(index)
        durable.fsync_dir(self.current)
