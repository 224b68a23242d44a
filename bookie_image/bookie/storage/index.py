"""The RocksDB indexes of one ledger directory, in DbLedgerStorage's key layout.

``ledgers``: int64 ledger id -> ``LedgerData`` (exists, fenced, masterKey, explicitLac, limbo; protobuf).
``locations``: (int64 ledger id, int64 entry id) -> int64 location ``(logId << 32) | offset``.
Each has a ``<name>.sequence`` file beside it, only this bookie's: RocksDB's sequence number at the index's last
sync, which it must not open below (``RocksIndex``).
Calls block on RocksDB: the engine makes them from its worker threads, never from the event loop.

The binding (rocksdict) holds the GIL for the whole of every call, so a call that waits for the device would
freeze the whole bookie (the event loop, the journal's acknowledgements, the ZooKeeper session's heartbeats) for as
long as the device does. So no call here writes a file: writes go to the memtable only, without RocksDB's
write-ahead log (the bookie's journal is the log that replays them after a crash, from ``lastMark``, as for the
entry logs), and a sync flushes the memtable to a table file on RocksDB's own threads while this one waits with
the GIL released (``RocksIndex.sync``).
"""

from __future__ import annotations

import contextlib
import errno
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from rocksdict import Rdict, WriteBatch, WriteOptions

from bookie.storage import durable, index_format
from bookie.storage._write_path import put_locations, yield_gil
from bookie.storage.errors import IndexRolledBackError
from bookie.storage.index_logs import IndexDamagedError

_LEDGER_KEY = struct.Struct(">q")
_LOCATION_KEY = struct.Struct(">qq")
_LOCATION = struct.Struct(">q")
MAX_ENTRY_ID = 2**63 - 1
STORAGE_FLAGS_KEY = -0xEEFD  # special ledgers key holding storage-state flags, skipped when listing
PUT_BATCH = 512  # locations per RocksDB write: well under a millisecond of GIL each
FLUSH_POLL_S = 0.002  # how often a sync looks whether RocksDB's flush is done (the GIL free in between)
_MEMTABLE_ONLY = WriteOptions()
_MEMTABLE_ONLY.disable_wal = True  # type: ignore[method-assign,assignment]  # a property; the stub says method
# Properties that are all 0 once every memtable a flush was asked for is in a table file and the manifest.
_FLUSH_UNDER_WAY = ("rocksdb.num-immutable-mem-table", "rocksdb.mem-table-flush-pending", "rocksdb.num-running-flushes")


@dataclass(frozen=True, slots=True)
class LedgerData:
    """What a bookie remembers about a ledger besides its entries."""

    master_key: bytes = b""
    fenced: bool = False
    explicit_lac: bytes | None = None
    limbo: bool = False
    exists: bool = True

    def encode(self) -> bytes:
        """proto2 ``LedgerData`` (DbLedgerStorageDataFormats.proto), hand-encoded: five small fields."""
        out = bytearray((0x08, int(self.exists), 0x10, int(self.fenced), 0x1A))
        out += _varint(len(self.master_key)) + self.master_key
        if self.explicit_lac is not None:
            out += b"\x22" + _varint(len(self.explicit_lac)) + self.explicit_lac
        if self.limbo:
            out += b"\x28\x01"
        return bytes(out)

    @staticmethod
    def decode(data: bytes) -> LedgerData:
        fields: dict[int, int | bytes] = {}
        pos = 0
        while pos < len(data):
            tag, pos = _read_varint(data, pos)
            number, wire_type = tag >> 3, tag & 7
            if wire_type == 0:
                value, pos = _read_varint(data, pos)
                fields[number] = value
            elif wire_type == 2:
                length, pos = _read_varint(data, pos)
                fields[number] = data[pos:pos + length]
                pos += length
            else:
                raise ValueError(f"LedgerData: unsupported wire type {wire_type}")
        lac = fields.get(4)
        return LedgerData(master_key=bytes(fields.get(3, b"")),
                          fenced=bool(fields.get(2, 0)),
                          explicit_lac=bytes(lac) if isinstance(lac, bytes) else None,
                          limbo=bool(fields.get(5, 0)), exists=bool(fields.get(1, 1)))

    def with_changes(self, **changes: object) -> LedgerData:
        return replace(self, **changes)  # type: ignore[arg-type]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("LedgerData: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def ledger_id_of_key(key: bytes, index: Path) -> int:
    """The ledger id of a ledgers-index key: its first 8 bytes, as Apache BookKeeper reads them."""
    if len(key) < _LEDGER_KEY.size:
        raise IndexDamagedError(f"RocksDB ledgers index {index}: a key of {len(key)} bytes ({key.hex()}), shorter "
                                "than a ledger id")
    (ledger_id,) = _LEDGER_KEY.unpack_from(key)
    return int(ledger_id)


@contextlib.contextmanager
def rocksdb_io_errors(what: str) -> Iterator[None]:
    """RocksDB's failed reads, writes and syncs of its files as the ``OSError`` they are.

    The binding raises a plain ``Exception`` whose message starts with "IO error" (and, once a write or sync
    failed, "IO error: Writer has previous error." for every later one). The engine tells a full disk (turn
    read-only, retry) from a failing one (stop) by ``OSError.errno``, so the message's errno is kept: ENOSPC or
    EDQUOT when RocksDB names it, EIO otherwise. Other exceptions pass unchanged."""
    try:
        yield
    except OSError:
        raise
    except Exception as exc:
        message = str(exc)
        if not message.startswith("IO error"):
            raise
        number = (errno.ENOSPC if "No space left on device" in message
                  else errno.EDQUOT if "Disk quota exceeded" in message else errno.EIO)
        raise OSError(number, f"{what}: RocksDB {message}") from exc


def _open(path: Path) -> Rdict:
    durable.make_dirs(path.parent)
    db = index_format.open_db(path)  # in the table format Apache BookKeeper's RocksDB reads (see there)
    durable.fsync_dir(path.parent)  # RocksDB made its directory durable inside, not in its parent
    return db


class RocksIndex:
    """One RocksDB index of a ledger directory, ``<indexDir>/current/<NAME>``, refused when it opens rolled back.

    Every sync records RocksDB's sequence number in ``<NAME>.sequence`` beside it (its bytes synced, its name made
    durable by its directory's next fsync, ``LedgerDirStorage.settle_names``). An index that opens below that
    number lost writes it had made durable: RocksDB recovers some damage to its manifest or write-ahead log
    by dropping what it cannot read, and opens without an error. Serving from it would lose what those writes
    said (``LOST``), so the bookie refuses to start instead. A disk without the file (one Apache BookKeeper
    wrote) is taken as it is and gets the file at its first sync; Apache BookKeeper's own later writes on the
    disk only raise the number, so the disk can go back and forth between the two."""

    NAME: ClassVar[str]  # the RocksDB directory under current/
    KIND: ClassVar[str]  # what messages call the index
    LOST: ClassVar[str]  # what serving it rolled back would do

    def __init__(self, current_dir: Path) -> None:
        self.path = current_dir / self.NAME
        self.db = _open(self.path)
        self.db.set_write_options(_MEMTABLE_ONLY)
        self._errors_seen = self.db.property_int_value("rocksdb.background-errors")
        self.sequence_file = current_dir / f"{self.NAME}.sequence"
        self._recorded: int | None = None  # what the file holds, once read or written by this process
        self.sequence_staged = False  # its new name not yet made durable by an fsync of its directory
        try:
            self._check_not_rolled_back()
        except BaseException:
            self.db.close()
            raise

    def _check_not_rolled_back(self) -> None:
        try:
            recorded = int(self.sequence_file.read_text())
        except FileNotFoundError:
            return
        except ValueError:
            raise IndexRolledBackError(f"{self.sequence_file}: not a sequence number; the {self.KIND} cannot be "
                                       "checked against its last sync") from None
        opened = self.db.latest_sequence_number()
        if opened < recorded:
            raise IndexRolledBackError(
                f"RocksDB {self.KIND} {self.path} opened at sequence {opened}, "
                f"below the {recorded} its last sync made durable: its manifest or write-ahead log is damaged "
                f"and writes were dropped, so {self.LOST}. Restore the index together with {self.sequence_file.name}, "
                f"rebuild it from the files with `bookie index rebuild {self.NAME} --conf <bk_server.conf>` (the "
                "bookie stopped), or take the bookie out of the cluster (its data is on the other replicas) and start "
                f"it on empty disks. If Apache BookKeeper's `{index_format.REBUILD_COMMANDS[self.NAME]}` rebuilt "
                f"this index, delete {self.sequence_file}: a rebuilt index numbers its writes from 0 again")
        self._recorded = recorded

    def sync(self) -> None:
        """The index's writes made durable, and its sequence number recorded for the next start's check (the
        file rewritten only when the number moved: a sync without writes flushes nothing). Only after a
        successful flush; the number is read before it, so the writes it counts are all in the flushed tables."""
        sequence = self.db.latest_sequence_number()
        if sequence == self._recorded:
            return
        what = f"syncing the {self.KIND} {self.path}"
        if self.keeps_a_write_error():
            self._raise_flush_error(what)
        with rocksdb_io_errors(what):
            self.db.flush(False)  # the memtable switched here; RocksDB's own threads write and sync the table
        while any(self.db.property_int_value(name) for name in _FLUSH_UNDER_WAY):
            if self.keeps_a_write_error():
                self._raise_flush_error(what)
            time.sleep(FLUSH_POLL_S)
        if self.keeps_a_write_error():
            self._raise_flush_error(what)
        # Its name is left to the next fsync of the directory (``LedgerDirStorage.settle_names``), shared with the
        # journal mark's: the older number a power cut may leave makes the start-up check less strict, never wrong.
        durable.stage_file(self.sequence_file, str(sequence).encode())
        self._recorded = sequence
        self.sequence_staged = True

    def keeps_a_write_error(self) -> bool:
        """Whether a flush on RocksDB's threads failed since the last one known to have succeeded. After a full
        disk RocksDB refuses every write until it is opened again, even once the disk has room (it does not resume
        by itself, and the binding has no resume): the engine then stops the bookie for its supervisor to start."""
        return self.db.property_int_value("rocksdb.background-errors") != self._errors_seen

    def _raise_flush_error(self, what: str) -> None:
        """A failed flush stops the database; a call made on this thread then answers its error (mapped to the
        ``OSError`` it is), or succeeds once RocksDB recovered (a full disk that has room again)."""
        with rocksdb_io_errors(what):
            self.db.flush(True)
        self._errors_seen = self.db.property_int_value("rocksdb.background-errors")

    def close(self) -> None:
        """Closes the database; RocksDB's flush at the close reports the write error it kept from a full disk
        (known already: the journal replays what the index had not synced), closed all the same."""
        kept = self.keeps_a_write_error()
        try:
            self.db.close()
        except Exception:
            if not kept:
                raise


class LedgerIndex(RocksIndex):
    """``<indexDir>/current/ledgers``: ledger id -> LedgerData."""

    NAME = "ledgers"
    KIND = "ledgers index"
    LOST = ("ledgers would lose their fenced flag (a fenced ledger writable again by its old writer), master key "
            "or explicit LAC")

    def load_all(self) -> dict[int, LedgerData]:
        """Every ledger of the index. A ledger under a 16-byte key (Apache BookKeeper's ``rebuild-db-ledgers-index``
        writes its id and 8 zero bytes; its bookie reads the first 8 and writes 8-byte keys after) is moved to its
        8-byte key, or dropped when that key exists too: it was written after the rebuild, so it is newer. A long
        key left in place would outlive the ledger's deletion and bring it back at the next start."""
        result: dict[int, LedgerData] = {}
        rekeyed = WriteBatch(raw_mode=True)
        it = self.db.iter()
        it.seek_to_first()
        while it.valid():
            key = it.key()
            ledger_id = ledger_id_of_key(key, self.path)
            if len(key) != _LEDGER_KEY.size:
                rekeyed.delete(key)
                if ledger_id not in result:  # an 8-byte key sorts before its longer ones
                    rekeyed.put(_LEDGER_KEY.pack(ledger_id), it.value())
                else:
                    it.next()
                    continue
            if ledger_id != STORAGE_FLAGS_KEY:
                result[ledger_id] = LedgerData.decode(it.value())
            it.next()
        if len(rekeyed):
            self.db.write(rekeyed)  # made durable by the next sync; until then the next start redoes it
        return result

    def put(self, ledger_id: int, data: LedgerData) -> None:
        self.db.put(_LEDGER_KEY.pack(ledger_id), data.encode())

    def delete(self, ledger_id: int) -> None:
        self.db.delete(_LEDGER_KEY.pack(ledger_id))


class LocationIndex(RocksIndex):
    """``<indexDir>/current/locations``: (ledger id, entry id) -> location."""

    NAME = "locations"
    KIND = "location index"
    LOST = "entries on disk would be answered as missing"

    def __init__(self, current_dir: Path) -> None:
        self._lock = threading.Lock()  # one writer at a time: checkpoint vs compaction vs deletes
        super().__init__(current_dir)

    def get(self, ledger_id: int, entry_id: int) -> int | None:
        raw = self.db.get(_LOCATION_KEY.pack(ledger_id, entry_id))
        if raw is None:
            return None
        (location,) = _LOCATION.unpack(raw)
        return location or None

    def put_packed(self, locations: bytes | bytearray) -> None:
        """Locations as an entry log's ``append_batch`` packs them (ledger id, entry id, location: 24 bytes each,
        the first 16 the key). Written in batches of ``PUT_BATCH``, the GIL yielded after each: RocksDB's write
        holds the GIL throughout (memtable inserts only), and the event loop must not wait for a whole
        checkpoint's index."""
        records = len(locations) // 24
        start = 0
        while start < records:
            batch = WriteBatch(raw_mode=True)
            start = put_locations(batch.put, locations, start, PUT_BATCH)
            with self._lock, rocksdb_io_errors(f"writing the {self.KIND} {self.path}"):
                self.db.write(batch)
            yield_gil()  # the calls above never see the interpreter's switch request

    def replace_if_unchanged(self, moves: Iterable[tuple[int, int, int, int]]) -> int:
        """Compaction: point entries at their new location only where they still point at the old one.

        ``moves`` are (ledger, entry, old location, new location); returns how many were updated. An entry
        rewritten or deleted meanwhile keeps its newer state.
        """
        batch = WriteBatch(raw_mode=True)
        updated = 0
        with self._lock:
            for ledger_id, entry_id, old, new in moves:
                if self.get(ledger_id, entry_id) == old:
                    batch.put(_LOCATION_KEY.pack(ledger_id, entry_id), _LOCATION.pack(new))
                    updated += 1
            self.db.write(batch)
        return updated

    def last_entry(self, ledger_id: int) -> int | None:
        it = self.db.iter()
        it.seek_for_prev(_LOCATION_KEY.pack(ledger_id, MAX_ENTRY_ID))
        if not it.valid():
            return None
        found_ledger, entry_id = _LOCATION_KEY.unpack(it.key())
        return entry_id if found_ledger == ledger_id else None

    def entries(self, ledger_id: int) -> Iterator[tuple[int, int]]:
        """(entry id, location) of a ledger in entry order."""
        it = self.db.iter()
        it.seek(_LOCATION_KEY.pack(ledger_id, 0))
        while it.valid():
            found_ledger, entry_id = _LOCATION_KEY.unpack(it.key())
            if found_ledger != ledger_id:
                return
            yield entry_id, _LOCATION.unpack(it.value())[0]
            it.next()

    def delete_ledger(self, ledger_id: int) -> None:
        with self._lock:
            self.db.delete_range(_LOCATION_KEY.pack(ledger_id, 0), _LOCATION_KEY.pack(ledger_id, MAX_ENTRY_ID))
            self.db.delete(_LOCATION_KEY.pack(ledger_id, MAX_ENTRY_ID))
