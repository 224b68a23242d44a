"""The check of an index's log files before RocksDB reads them: its MANIFEST and its write-ahead logs.

Both are in RocksDB's log format: 32 KiB blocks of records, each with a header (a masked CRC32C, a length, a
record type; the "recyclable" types add the number of the log they were written for) and its bytes. The
MANIFEST lists the index's table files; a write-ahead log holds the writes not yet in a table file (ours writes
none: its index writes skip the log and are synced by flushes; Apache BookKeeper's do, so a disk taken over from
it has them). RocksDB's log reader can loop forever on some damaged records instead of refusing them (seen here
with the RocksDB in rocksdict 0.3.29: one flipped bit that turned a record's type into a recyclable one, in a
MANIFEST or a write-ahead log, made it spin at full CPU in ``log::Reader::ReadRecord`` with the GIL held,
never opening and never saying why). And a write-ahead log with a damaged record in its middle is opened
without a word, replayed only up to that record: every later write silently lost. So both are checked here
first, and a damaged record refuses the index with its file and offset, without handing the file to RocksDB:

- in a MANIFEST, a record whose checksum fails or that overruns its block, and a record of a recyclable type
  anywhere, even cut short at the end: RocksDB writes those only in recycled write-ahead logs, never in a
  MANIFEST, so one there is a damaged type (and its longer header could make a whole last record look cut short);
- in a write-ahead log, a record of the other kind than its first (recyclable or not: RocksDB writes a log's
  records all of one kind, recyclable when told to recycle logs), and a record whose checksum fails or that
  overruns its block with a sound record after it; with nothing sound after it, it is the log's torn end, left
  to RocksDB (a crash while it appended). In a recycled log, a sound record of another log's number is what
  is left of the file's previous use: the log ends there.

A record of another type cut short at the end of a file (a torn write) is left to RocksDB, which drops it; an
index that thereby opens older than it was is refused by its sequence check (``bookie.storage.index``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

from bookie.storage.errors import StorageError

BLOCK_SIZE = 32 * 1024
_HEADER = struct.Struct("<IHB")  # masked CRC32C, length, record type
_LOG_NUMBER = struct.Struct("<I")  # after the header of a recyclable record: the log it was written for
_RECYCLABLE_TYPES = frozenset({5, 6, 7, 8, 11})
_MASK_DELTA = 0xA282EAD8  # RocksDB stores a CRC rotated and offset, so a CRC of bytes holding CRCs stays distinct


class IndexDamagedError(StorageError):
    """A RocksDB index that is damaged (its MANIFEST, its write-ahead log, a key): it cannot be served as it is."""


def unmask(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


@dataclass(frozen=True)
class _Record:
    end: int                    # where the next record starts; len(data) or more when cut short at the end
    fault: str | None = None    # what is wrong with it; None: sound
    torn: bool = False          # the fault can be a torn write (the checksum, the length), not a wrong type
    stale: bool = False         # a sound record of a recycled log's previous use: the log ends before it


def _read(data: bytes, pos: int, recycled: bool | None, log_number: int) -> _Record:
    """The record at ``pos`` of a MANIFEST (``recycled`` None) or of a write-ahead log whose records are recyclable
    or not, numbered ``log_number``."""
    masked, length, record_type = _HEADER.unpack_from(data, pos)
    recyclable = record_type in _RECYCLABLE_TYPES
    if recycled is None and recyclable:
        return _Record(len(data), f"type {record_type}, which RocksDB writes only in recycled write-ahead logs")
    if recycled is not None and recyclable != recycled:
        return _Record(len(data), f"type {record_type} in a log of {'' if recycled else 'non-'}recyclable records")
    header = _HEADER.size + (_LOG_NUMBER.size if recyclable else 0)
    end = pos + header + length
    if end > len(data):
        return _Record(end)
    if end > pos + BLOCK_SIZE - pos % BLOCK_SIZE:
        return _Record(end, f"{length} bytes long, past the end of its {BLOCK_SIZE}-byte block", torn=True)
    # The checksum covers the type, a recyclable record's log number, and the bytes.
    if crc32c.crc32c(data[pos + 6:end]) != unmask(masked):
        return _Record(end, "its checksum fails", torn=True)
    stale = recyclable and _LOG_NUMBER.unpack_from(data, pos + _HEADER.size)[0] != log_number
    return _Record(end, stale=stale)


def _sound_record_after(data: bytes, pos: int, end: int, recycled: bool, log_number: int) -> bool:
    """Whether a sound record of the log follows a failing one at ``pos`` (``end``: where its length says the next
    starts): there, or at the start of any later block (every block starts with a record)."""
    starts = [end] if end % BLOCK_SIZE + _HEADER.size <= BLOCK_SIZE and end < len(data) else []
    starts += range((pos // BLOCK_SIZE + 1) * BLOCK_SIZE, len(data), BLOCK_SIZE)
    for start in starts:
        if start + _HEADER.size > len(data) or data[start:start + _HEADER.size] == bytes(_HEADER.size):
            continue
        record = _read(data, start, recycled, log_number)
        if record.fault is None and not record.stale and record.end <= len(data):
            return True
    return False


def _recycled(data: bytes) -> bool:
    """Whether a write-ahead log's records are recyclable: its first block read both ways (headers with and without
    a log number), the way under which more records are sound. A damaged type fails its record's checksum, so one
    record read wrong does not decide it."""
    def sound(recyclable: bool) -> int:
        count, pos, limit = 0, 0, min(len(data), BLOCK_SIZE)
        header = _HEADER.size + (_LOG_NUMBER.size if recyclable else 0)
        while pos + header <= limit:
            masked, length, record_type = _HEADER.unpack_from(data, pos)
            end = pos + header + length
            if end > limit:
                break
            if (record_type in _RECYCLABLE_TYPES) == recyclable and crc32c.crc32c(data[pos + 6:end]) == unmask(masked):
                count += 1
            pos = end
        return count

    return sound(True) > sound(False)


def first_damaged_record(data: bytes, log_number: int | None = None) -> tuple[int, str] | None:
    """The offset of the first damaged record of a MANIFEST (``log_number`` None) or of the write-ahead log of that
    number, and what is wrong with it (see above); None when every record holds."""
    recycled = None if log_number is None else _recycled(data)
    pos = 0
    while pos + _HEADER.size <= len(data):
        block_left = BLOCK_SIZE - pos % BLOCK_SIZE
        if block_left < _HEADER.size:  # a block's trailer: too short for a header, zeros
            pos += block_left
            continue
        if data[pos:pos + _HEADER.size] == bytes(_HEADER.size):  # a preallocated tail: nothing written from here
            return None
        record = _read(data, pos, recycled, log_number or 0)
        if record.fault is not None:
            if recycled is not None and record.torn and not _sound_record_after(data, pos, record.end, recycled,
                                                                                 log_number or 0):
                return None  # the log's torn end
            return pos, record.fault
        if record.stale or record.end > len(data):  # a recycled log's end; cut short at the end: RocksDB's call
            return None
        pos = record.end
    return None


def _refuse(index: Path, name: str, damage: tuple[int, str] | None, what: str) -> None:
    if damage is not None:
        offset, why = damage
        raise IndexDamagedError(f"RocksDB index {index}: {name} is damaged (the record at byte {offset}: {why}), "
                                f"so RocksDB cannot tell {what}")


def check(index: Path) -> None:
    """Raise ``IndexDamagedError`` when the MANIFEST that ``index/CURRENT`` names or a write-ahead log of the index
    has a damaged record; a new index (no CURRENT yet) and one whose CURRENT names no readable file are left to
    RocksDB."""
    try:
        name = (index / "CURRENT").read_text().strip()
        manifest = (index / name).read_bytes()
    except (OSError, ValueError):  # no CURRENT, or one naming no readable file
        return
    _refuse(index, name, first_damaged_record(manifest), "which table files hold the index")
    for log in sorted(index.glob("*.log")):
        if log.stem.isdigit():
            _refuse(index, log.name, first_damaged_record(log.read_bytes(), int(log.stem)),
                    "which writes the index took after its last flush")
