"""BookKeeper's entry log file format (DefaultEntryLogger), pure: no files, no threads.

A log is a 1024-byte header (``"BKLO"``, version, ledgers-map offset, ledgers count), then records
``int32 size | entry``, then, once the log is finalized, the ledgers map: batches of
``int32 len | int64 -1 | int64 -2 | int32 count | count x (int64 ledgerId, int64 bytes)``.
Used by the bookie's entry logger, by ``bookie entrylog dump`` and by the Spark audit (pipeline/), so
there is exactly one parser of the format.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Mapping
from dataclasses import dataclass

HEADER_SIZE = 1024
MAGIC = b"BKLO"
HEADER_V0 = 0  # no ledgers map
HEADER_V1 = 1  # ledgers map at the end, located by the header
INVALID_LEDGER_ID = -1
LEDGERS_MAP_ENTRY_ID = -2
LEDGERS_MAP_MAX_BATCH = 10000
RECORD_SIZE_PREFIX = 4
MAX_ENTRY_SIZE = 2**31 - 1

_HEADER = struct.Struct(">4siqi")
_INT32 = struct.Struct(">i")
_ID_PAIR = struct.Struct(">qq")
_MAP_BATCH_HEAD = struct.Struct(">iqqi")  # len(after this int), -1, -2, count
_MAP_ITEM = struct.Struct(">qq")

Buffer = bytes | bytearray | memoryview


class CorruptRecord(ValueError):
    """A record or ledgers map that cannot be what the format says; ``offset`` is where it starts."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"at offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True, slots=True)
class LogHeader:
    version: int = HEADER_V1
    ledgers_map_offset: int = 0
    ledgers_count: int = 0

    @property
    def has_ledgers_map(self) -> bool:
        """A finalized log; a crash leaves offset or count 0, which must force a scan (BookKeeper PR #4607)."""
        return self.version >= HEADER_V1 and self.ledgers_map_offset > 0 and self.ledgers_count > 0

    def encode(self) -> bytes:
        head = _HEADER.pack(MAGIC, self.version, self.ledgers_map_offset, self.ledgers_count)
        return head + bytes(HEADER_SIZE - len(head))

    @staticmethod
    def decode(buf: Buffer) -> LogHeader:
        if len(buf) < _HEADER.size:
            raise CorruptRecord(0, f"entry log header is {len(buf)} bytes, shorter than {_HEADER.size}")
        magic, version, offset, count = _HEADER.unpack_from(buf, 0)
        if magic != MAGIC:
            raise CorruptRecord(0, f"bad entry log magic {bytes(magic)!r}, expected {MAGIC!r}")
        return LogHeader(version, offset, count)


MAP_LOCATION_OFFSET = 8  # header bytes 8..19: int64 ledgers-map offset, int32 ledgers count


def encode_map_location(offset: int, count: int) -> bytes:
    """The 12 bytes written at ``MAP_LOCATION_OFFSET`` when a log is finalized."""
    return struct.pack(">qi", offset, count)


@dataclass(frozen=True, slots=True)
class Record:
    offset: int        # of the size prefix
    size: int          # entry bytes
    ledger_id: int
    entry_id: int
    data: memoryview   # the entry bytes

    @property
    def location_offset(self) -> int:
        """Position stored in the index: just after the size prefix."""
        return self.offset + RECORD_SIZE_PREFIX


def encode_record(ledger_id: int, entry_id: int, payload: Buffer) -> bytes:
    """A record whose entry is ``payload``; the entry's first 16 bytes must be ledger id and entry id."""
    if len(payload) < _ID_PAIR.size:
        raise ValueError(f"entry of {len(payload)} bytes is shorter than its ledger/entry id header")
    got = _ID_PAIR.unpack_from(payload, 0)
    if got != (ledger_id, entry_id):
        raise ValueError(f"entry header says ledger {got[0]} entry {got[1]}, not {ledger_id}/{entry_id}")
    return _INT32.pack(len(payload)) + bytes(payload)


def iter_records(buf: Buffer, start: int = HEADER_SIZE, end: int | None = None) -> Generator[Record, None, None]:
    """Records between ``start`` and ``end`` (default: the whole buffer, up to a ledgers map).

    Zero sizes are padding (skipped a byte at a time, as BookKeeper's scanner does). A record that runs past
    the end, or a negative size, raises ``CorruptRecord`` at its offset: callers decide whether to stop.
    """
    view = memoryview(buf)
    limit = len(view) if end is None else min(end, len(view))
    pos = start
    while pos + RECORD_SIZE_PREFIX <= limit:
        (size,) = _INT32.unpack_from(view, pos)
        if size == 0:
            pos += 1
            continue
        if size < 0:
            raise CorruptRecord(pos, f"negative record size {size}")
        body_at = pos + RECORD_SIZE_PREFIX
        if body_at + size > len(view):
            raise CorruptRecord(pos, f"record of {size} bytes runs past the end of the data ({len(view)})")
        if size < _ID_PAIR.size:
            raise CorruptRecord(pos, f"record of {size} bytes is shorter than the ledger/entry id header")
        ledger_id, entry_id = _ID_PAIR.unpack_from(view, body_at)
        if ledger_id == INVALID_LEDGER_ID and entry_id == LEDGERS_MAP_ENTRY_ID:
            return  # the ledgers map starts here
        if ledger_id < 0:
            raise CorruptRecord(pos, f"negative ledger id {ledger_id}")
        yield Record(pos, size, ledger_id, entry_id, view[body_at:body_at + size])
        pos = body_at + size


def encode_ledgers_map(mapping: Mapping[int, int]) -> bytes:
    """The ledgers map appended when a log is finalized: ledger id -> bytes (entry size + 4)."""
    items = sorted(mapping.items())
    out = bytearray()
    for i in range(0, len(items), LEDGERS_MAP_MAX_BATCH):
        batch = items[i:i + LEDGERS_MAP_MAX_BATCH]
        body_len = _MAP_BATCH_HEAD.size - 4 + len(batch) * _MAP_ITEM.size
        out += _MAP_BATCH_HEAD.pack(body_len, INVALID_LEDGER_ID, LEDGERS_MAP_ENTRY_ID, len(batch))
        for ledger_id, size in batch:
            out += _MAP_ITEM.pack(ledger_id, size)
    return bytes(out)


def decode_ledgers_map(buf: Buffer, header: LogHeader) -> dict[int, int]:
    """The ledgers map of a finalized log held whole in ``buf``; raises ``CorruptRecord`` when inconsistent."""
    if not header.has_ledgers_map:
        raise CorruptRecord(0, "entry log has no ledgers map (not finalized, or written by a crashed bookie)")
    view = memoryview(buf)
    pos = header.ledgers_map_offset
    result: dict[int, int] = {}
    while len(result) < header.ledgers_count:
        if pos + _MAP_BATCH_HEAD.size > len(view):
            raise CorruptRecord(pos, "ledgers map truncated")
        body_len, lid, eid, count = _MAP_BATCH_HEAD.unpack_from(view, pos)
        if (lid, eid) != (INVALID_LEDGER_ID, LEDGERS_MAP_ENTRY_ID):
            raise CorruptRecord(pos, f"ledgers map batch has ids {lid}/{eid}, expected -1/-2")
        expected = _MAP_BATCH_HEAD.size - 4 + count * _MAP_ITEM.size
        if count <= 0 or body_len != expected or pos + 4 + body_len > len(view):
            raise CorruptRecord(pos, f"ledgers map batch of {count} ledgers has inconsistent length {body_len}")
        item_at = pos + _MAP_BATCH_HEAD.size
        for _ in range(count):
            ledger_id, size = _MAP_ITEM.unpack_from(view, item_at)
            result[ledger_id] = size
            item_at += _MAP_ITEM.size
        pos += 4 + body_len
    if len(result) != header.ledgers_count:
        raise CorruptRecord(header.ledgers_map_offset,
                            f"ledgers map holds {len(result)} ledgers, header says {header.ledgers_count}")
    return result


def make_location(log_id: int, position: int) -> int:
    """The index value of an entry: ``(logId << 32) | position of the entry bytes``."""
    return (log_id << 32) | position


def split_location(location: int) -> tuple[int, int]:
    return location >> 32, location & 0xFFFFFFFF


def log_file_name(log_id: int) -> str:
    return f"{log_id:x}.log"


def parse_log_file_name(name: str) -> int | None:
    """The log id of ``<hex>.log``, or None for other files (``.compacting``, ``.compacted``)."""
    stem, dot, ext = name.partition(".")
    if ext != "log" or not dot:
        return None
    try:
        return int(stem, 16)
    except ValueError:
        return None
