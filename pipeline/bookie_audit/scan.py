"""Reading entry logs into Arrow record batches, without Spark (the data source calls these in its workers).

Every byte format question is answered by ``bookie.storage.entrylog_format`` (records, header, ledgers map)
and ``bookie.protocol.entry`` (entry header, digests); this module only walks, batches and flags.

Two readings of a log:

* ``ledger_rows`` (metadata mode): header + ledgers map, one row per (log, ledger) with its bytes, as
  BookKeeper's GC reads it; a log without a usable map (active, crashed, corrupt map) is scanned instead,
  as ``extractEntryLogMetadataByScanning`` does.
* ``record_rows`` (full scan): one row per record in ``[start, end)`` of a log, with its entry header and
  whether its digest checks. A range that does not start at ``HEADER_SIZE`` first re-synchronises on the
  next record boundary (see ``find_record_start``). A corrupt or truncated record gives one flagged row
  covering the bytes up to the next good record, never an exception.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from bookie.protocol import entry as bke
from bookie.storage import entrylog_format as ef

from bookie_audit.files import LogFile, LogReader

BATCH_ROWS = 8192
RESYNC_CHAIN = 4  # records that must follow a candidate boundary for it to be believed
REMOTE_SLACK = 8 << 20

OK = "ok"
CORRUPT = "corrupt"
TRUNCATED = "truncated"
VANISHED = "vanished"  # listed, then deleted before it was read (GC on a live bookie): its bytes were garbage
VANISHED_ERROR = "deleted since it was listed (GC of a live bookie)"

LEDGER_SCHEMA = pa.schema([
    ("bookie", pa.string()), ("path", pa.string()), ("log_id", pa.int64()), ("file_size", pa.int64()),
    ("mtime_ms", pa.int64()), ("header_version", pa.int32()), ("source", pa.string()),
    ("status", pa.string()), ("error", pa.string()), ("ledger_id", pa.int64()), ("bytes", pa.int64()),
])
LEDGER_DDL = ("bookie STRING, path STRING, log_id BIGINT, file_size BIGINT, mtime_ms BIGINT, "
              "header_version INT, source STRING, status STRING, error STRING, ledger_id BIGINT, bytes BIGINT")

RECORD_SCHEMA = pa.schema([
    ("bookie", pa.string()), ("path", pa.string()), ("log_id", pa.int64()), ("mtime_ms", pa.int64()),
    ("offset", pa.int64()), ("size", pa.int64()), ("ledger_id", pa.int64()), ("entry_id", pa.int64()),
    ("lac", pa.int64()), ("length", pa.int64()), ("digest", pa.string()), ("checksum_ok", pa.bool_()),
    ("status", pa.string()), ("error", pa.string()),
])
RECORD_DDL = ("bookie STRING, path STRING, log_id BIGINT, mtime_ms BIGINT, offset BIGINT, size BIGINT, "
              "ledger_id BIGINT, entry_id BIGINT, lac BIGINT, length BIGINT, digest STRING, "
              "checksum_ok BOOLEAN, status STRING, error STRING")

_INT32 = struct.Struct(">i")

# ledger id -> (digest type, password), from the metadata snapshot
DigestInfo = Mapping[int, tuple[int, bytes]]


# ------------------------------------------------------------------ digests


_CRC32C = bke.digest_manager(bke.DigestType.CRC32C)
_CRC32 = bke.digest_manager(bke.DigestType.CRC32)


@dataclass
class DigestChecker:
    """Checks entries with their ledger's digest (from the snapshot) or, unknown, by trying CRC32C and CRC32.

    A ledger whose entries verified with a CRC is assumed to use it: a later mismatch is a failure, not
    "unknown" (``checksum_ok`` is null only when no digest of the ledger was ever recognised).
    """

    known: DigestInfo = field(default_factory=dict)
    _managers: dict[int, bke.DigestManager] = field(default_factory=dict)
    _learned: dict[int, bke.DigestManager] = field(default_factory=dict)

    def check(self, ledger_id: int, data: memoryview) -> tuple[str, bool | None]:
        n_header = bke.METADATA_LENGTH
        info = self.known.get(ledger_id)
        if info is not None:
            manager = self._managers.get(ledger_id)
            if manager is None:
                manager = self._managers[ledger_id] = bke.digest_manager(info[0], info[1])
            n = manager.digest_length
            name = manager.digest_type.name.lower()
            if len(data) < n_header + n:
                return name, False
            return name, manager.compute((data[:n_header], data[n_header + n:])) == data[n_header:n_header + n]
        learned = self._learned.get(ledger_id)
        for manager in ((learned,) if learned is not None else (_CRC32C, _CRC32)):
            n = manager.digest_length
            if len(data) >= n_header + n and \
                    manager.compute((data[:n_header], data[n_header + n:])) == data[n_header:n_header + n]:
                self._learned[ledger_id] = manager
                return manager.digest_type.name.lower(), True
        if learned is not None:  # other entries of this ledger verified with this digest: this one is bad
            return learned.digest_type.name.lower(), False
        return "unknown", None


# ------------------------------------------------------------------ batching


class _Columns:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.cols: list[list[Any]] = [[] for _ in schema.names]

    def __len__(self) -> int:
        return len(self.cols[0])

    def add(self, *values: Any) -> None:
        for col, value in zip(self.cols, values, strict=True):
            col.append(value)

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(col, type=f.type) for col, f in zip(self.cols, self.schema, strict=True)],
            schema=self.schema)
        self.cols = [[] for _ in self.schema.names]
        return batch


# ------------------------------------------------------------------ record walking


def _plausible(rec: ef.Record) -> bool:
    """Could this be a stored entry? (Used to believe a re-synchronised boundary.)"""
    if rec.entry_id < 0 or rec.size < bke.METADATA_LENGTH:
        return False
    lac, length = struct.unpack_from(">qq", rec.data, 16)
    return -1 <= lac < rec.entry_id and length >= 0


def _crc_verified(rec: ef.Record) -> bool:
    return DigestChecker().check(rec.ledger_id, rec.data)[1] is True


def find_record_start(buf: memoryview, start: int, limit: int) -> int | None:
    """The first offset in ``[start, limit)`` from which ``RESYNC_CHAIN`` plausible records follow.

    Entry logs have no sync markers; a boundary is believed when a chain of records parses from it, each
    with a plausible entry header (non-negative entry id, LAC below it, non-negative length), or the chain
    reaches the ledgers map or the end of the data. A random offset passes that test with negligible odds.
    A chain cut by a corrupt record still counts after two plausible records (or one, when the corrupt
    record is a truncated tail), so that a boundary just before damage is not skipped.
    """
    size_limit = len(buf)
    for pos in range(start, min(limit, size_limit - ef.RECORD_SIZE_PREFIX + 1)):
        (size,) = _INT32.unpack_from(buf, pos)
        if size < 16 or pos + ef.RECORD_SIZE_PREFIX + size > size_limit:
            continue
        count = 0
        try:
            for rec in ef.iter_records(buf, pos):
                if not _plausible(rec):
                    break
                count += 1
                if count >= RESYNC_CHAIN or (count == 1 and _crc_verified(rec)):
                    return pos
            else:
                if count:
                    return pos  # the chain reached the ledgers map or the end of the data
        except ef.CorruptRecord as exc:
            if count >= 2 or (count == 1 and _corrupt_status(buf, exc.offset, size_limit) == TRUNCATED):
                return pos
            continue
    return None


def _corrupt_status(buf: memoryview, offset: int, data_end: int) -> str:
    if offset + ef.RECORD_SIZE_PREFIX <= len(buf):
        (size,) = _INT32.unpack_from(buf, offset)
        if size > 0 and offset + ef.RECORD_SIZE_PREFIX + size > data_end:
            return TRUNCATED
    return CORRUPT


@dataclass(frozen=True, slots=True)
class Flagged:
    offset: int
    size: int
    status: str
    error: str


def walk_records(buf: memoryview, start: int, end: int, data_end: int,
                 ) -> Iterator[ef.Record | Flagged]:
    """Records starting in ``[start, end)`` of a log held whole in ``buf``; bad spans become ``Flagged``.

    ``start`` must be a record boundary (``HEADER_SIZE`` or one found by ``find_record_start``). After a
    corrupt record the walk re-synchronises on the next good record inside the range, if any.
    """
    pos = start
    # iter_records yields records whose 4-byte prefix fits before its end: end + 3 => starts before `end`.
    stop = end + ef.RECORD_SIZE_PREFIX - 1
    while pos < end:
        try:
            yield from ef.iter_records(buf, pos, stop)
            return
        except ef.CorruptRecord as exc:
            bad = exc.offset
            status = _corrupt_status(buf, bad, data_end)
            if status == TRUNCATED:
                yield Flagged(bad, data_end - bad, status, exc.reason)
                return
            nxt = find_record_start(buf, bad + 1, end)
            gap_end = nxt if nxt is not None else max(min(end, data_end), bad + 1)
            yield Flagged(bad, gap_end - bad, status, exc.reason)
            if nxt is None:
                return
            pos = nxt


def _data_end(reader: LogReader) -> tuple[ef.LogHeader | None, int, str | None]:
    """(header, end of the records, header error)."""
    try:
        header = ef.LogHeader.decode(reader.read(0, ef.HEADER_SIZE))
    except ef.CorruptRecord as exc:
        return None, reader.size, exc.reason
    if header.has_ledgers_map and ef.HEADER_SIZE <= header.ledgers_map_offset <= reader.size:
        return header, header.ledgers_map_offset, None
    return header, reader.size, None


def _whole(reader: LogReader) -> memoryview:
    whole = reader.whole
    return whole if whole is not None else reader.read(0, reader.size)


def record_rows(log: LogFile, start: int, end: int, digests: DigestChecker | None = None,
                open_reader: Callable[[str], LogReader] = LogReader) -> Iterator[pa.RecordBatch]:
    """Full-scan rows of the records starting in ``[start, end)`` of ``log``.

    A log deleted since it was listed (GC of a live bookie) gives one ``vanished`` row, from the task of its
    first range. Every read of a range happens before its first batch is yielded, so no partial rows precede it.
    """
    try:
        yield from _record_rows(log, start, end, digests or DigestChecker(), open_reader)
    except FileNotFoundError:
        if start <= 0:
            out = _Columns(RECORD_SCHEMA)
            out.add(log.bookie, log.path, log.log_id, log.mtime_ms, 0, log.size, None, None, None, None, None, None,
                    VANISHED, VANISHED_ERROR)
            yield out.take()


def _record_rows(log: LogFile, start: int, end: int, checker: DigestChecker,
                 open_reader: Callable[[str], LogReader]) -> Iterator[pa.RecordBatch]:
    out = _Columns(RECORD_SCHEMA)
    reader = open_reader(log.path)
    try:
        if reader.size == 0:
            return  # an allocated, never written log: no records, nothing wrong
        _header, data_end, header_error = _data_end(reader)
        if start <= 0:
            if header_error is not None:
                out.add(log.bookie, log.path, log.log_id, log.mtime_ms, 0, min(reader.size, ef.HEADER_SIZE),
                        None, None, None, None, None, None, CORRUPT, header_error)
            start = ef.HEADER_SIZE
        end = min(end, data_end)
        if start < end:
            pos: int | None
            if reader.whole is not None:
                buf, base = reader.whole, 0
                pos = start if start == ef.HEADER_SIZE else find_record_start(buf, start, end)
            else:
                buf, base, pos = _remote_window(reader, start, end)
            if pos is not None:
                for item in walk_records(buf, pos, end - base, data_end - base):
                    if isinstance(item, Flagged):
                        out.add(log.bookie, log.path, log.log_id, log.mtime_ms, item.offset + base, item.size,
                                None, None, None, None, None, None, item.status, item.error)
                    else:
                        data = item.data
                        if item.size >= bke.METADATA_LENGTH:
                            eh = bke.parse_entry_header(data)
                            lac, length = eh.last_add_confirmed, eh.length
                            digest, ok = checker.check(item.ledger_id, data)
                        else:
                            lac = length = None  # type: ignore[assignment]
                            digest, ok = "unknown", False
                        out.add(log.bookie, log.path, log.log_id, log.mtime_ms, item.offset + base, item.size,
                                item.ledger_id, item.entry_id, lac, length, digest, ok, OK, None)
                        del data
                    del item
                    if len(out) >= BATCH_ROWS:
                        yield out.take()
        if len(out):
            yield out.take()
    finally:
        reader.close()


def _remote_window(reader: LogReader, start: int, end: int) -> tuple[memoryview, int, int | None]:
    """(bytes from ``start``, ``start``, first record boundary in them) for a ranged read of ``[start, end)``.

    The window runs ``REMOTE_SLACK`` past ``end`` and grows until the last record starting before ``end`` is
    whole (or the file ends), so that a record cut by the window is never mistaken for a truncated one.
    """
    tail_end = min(reader.size, end + REMOTE_SLACK)
    window = bytes(reader.read(start, tail_end - start))
    pos = 0 if start == ef.HEADER_SIZE else find_record_start(memoryview(window), 0, end - start)
    while pos is not None and tail_end < reader.size:
        need = None
        try:
            for _rec in ef.iter_records(window, pos, end - start + ef.RECORD_SIZE_PREFIX - 1):
                pass
        except ef.CorruptRecord as exc:
            at = exc.offset
            size = _INT32.unpack_from(window, at)[0] if at + ef.RECORD_SIZE_PREFIX <= len(window) else 0
            if size > 0 and start + at + ef.RECORD_SIZE_PREFIX + size > tail_end:
                need = min(reader.size, start + at + ef.RECORD_SIZE_PREFIX + size)
        if need is None:
            break
        window = window + bytes(reader.read(tail_end, need - tail_end))  # a new object: views may be alive
        tail_end = need
    return memoryview(window), start, pos


def ledger_rows(logs: list[LogFile], open_reader: Callable[[str], LogReader] = LogReader,
                ) -> Iterator[pa.RecordBatch]:
    """Metadata-mode rows: one per (log, ledger) from the ledgers map, or from a scan when there is none."""
    out = _Columns(LEDGER_SCHEMA)
    for log in logs:
        try:
            reader = open_reader(log.path)
            try:
                rows = list(_ledger_rows_of(log, reader))
            finally:
                reader.close()
        except FileNotFoundError:
            rows = [(log.bookie, log.path, log.log_id, log.size, log.mtime_ms, None, "file", VANISHED,
                     VANISHED_ERROR, None, None)]
        for row in rows:
            out.add(*row)
        if len(out) >= BATCH_ROWS:
            yield out.take()
    if len(out):
        yield out.take()


def _ledger_rows_of(log: LogFile, reader: LogReader) -> Iterator[tuple[Any, ...]]:
    base = (log.bookie, log.path, log.log_id, reader.size, log.mtime_ms)
    if reader.size == 0:  # allocated, never written (Apache BookKeeper pre-creates the next log): not damage
        yield (*base, None, "empty", OK, None, None, None)
        return
    header, data_end, header_error = _data_end(reader)
    if header is None:
        yield (*base, None, "header", CORRUPT, header_error, None, None)
        return
    status, error = OK, None
    if header.has_ledgers_map:
        offset = header.ledgers_map_offset
        try:
            if offset > reader.size:
                raise ef.CorruptRecord(offset, f"ledgers map offset {offset} is past the end ({reader.size})")
            # The map decoder wants the map at its file offset: hand it the tail behind one spare byte.
            tail = bytes(1) + bytes(reader.read(offset, reader.size - offset))
            shifted = ef.LogHeader(header.version, 1, header.ledgers_count)
            ledgers = ef.decode_ledgers_map(tail, shifted)
        except ef.CorruptRecord as exc:
            status, error = CORRUPT, f"ledgers map: {exc.reason}; scanned instead"
            data_end = reader.size
        else:
            if not ledgers:
                yield (*base, header.version, "map", OK, None, None, None)
            for ledger_id, size in sorted(ledgers.items()):
                yield (*base, header.version, "map", OK, None, ledger_id, size)
            return
    # No usable map: what BookKeeper does, a scan adding up (entry size + 4) per ledger.
    sizes: dict[int, int] = {}
    buf = _whole(reader)
    for item in walk_records(buf, ef.HEADER_SIZE, data_end, data_end):
        if isinstance(item, Flagged):
            if status == OK or item.status == TRUNCATED:
                status, error = item.status, f"at offset {item.offset}: {item.error}"
            continue
        sizes[item.ledger_id] = sizes.get(item.ledger_id, 0) + item.size + ef.RECORD_SIZE_PREFIX
        del item
    if not sizes:
        yield (*base, header.version, "scan", status, error, None, None)
    for ledger_id, size in sorted(sizes.items()):
        yield (*base, header.version, "scan", status, error, ledger_id, size)
