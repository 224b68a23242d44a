"""The check of an index's MANIFEST before RocksDB reads it: every record's checksum and type.

The MANIFEST is RocksDB's list of an index's table files. RocksDB reads it in a write-ahead-log format: 32 KiB
blocks of records, each with a header (a masked CRC32C, a length, a record type; the "recyclable" types add a log
number) and its bytes. A record whose checksum fails makes RocksDB refuse to open the index, as it should; but
its log reader can also loop forever on some damaged records instead of refusing (seen here with the RocksDB in
rocksdict 0.3.29: one flipped bit turned a record's type into a recyclable one, and the bookie spun at full CPU in
``log::Reader::ReadRecord`` with the GIL held, never starting and never saying why; RocksDB's own issue tracker
has reports of such loops). So the MANIFEST is checked here first, and a damaged record refuses the index with its
offset, without handing the file to RocksDB:

- a record whose checksum fails, or that overruns its block;
- a record of a recyclable type anywhere, even cut short at the end: RocksDB writes those only in recycled
  write-ahead logs, never in a MANIFEST, so one there is a damaged type (and its longer header could make a whole
  last record look cut short).

A record of another type cut short at the end of the file (a torn write) is left to RocksDB, which drops it; an
index that thereby opens older than it was is refused by its sequence check (``bookie.storage.index``).
"""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c

from bookie.storage.errors import StorageError

BLOCK_SIZE = 32 * 1024
_HEADER = struct.Struct("<IHB")  # masked CRC32C, length, record type
_RECYCLABLE_TYPES = frozenset({5, 6, 7, 8, 11})
_MASK_DELTA = 0xA282EAD8  # RocksDB stores a CRC rotated and offset, so a CRC of bytes holding CRCs stays distinct


class IndexDamagedError(StorageError):
    """A RocksDB index whose MANIFEST is damaged: it cannot be opened as it is."""


def unmask(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


def first_damaged_record(data: bytes) -> tuple[int, str] | None:
    """The offset of the first damaged record of a MANIFEST and what is wrong with it (see above); None when every
    record holds."""
    pos = 0
    while pos + _HEADER.size <= len(data):
        block_left = BLOCK_SIZE - pos % BLOCK_SIZE
        if block_left < _HEADER.size:  # a block's trailer: too short for a header, zeros
            pos += block_left
            continue
        masked, length, record_type = _HEADER.unpack_from(data, pos)
        if masked == length == record_type == 0:  # the zeros of a preallocated tail: nothing written from here
            return None
        if record_type in _RECYCLABLE_TYPES:
            return pos, f"type {record_type}, which RocksDB writes only in recycled write-ahead logs"
        end = pos + _HEADER.size + length
        if end > len(data):  # cut short at the end of the file: RocksDB's call
            return None
        if end > pos + block_left:
            return pos, f"{length} bytes long, past the end of its {BLOCK_SIZE}-byte block"
        # The checksum covers the type and the bytes.
        if crc32c.crc32c(data[pos + 6:end]) != unmask(masked):
            return pos, "its checksum fails"
        pos = end
    return None


def check(index: Path) -> None:
    """Raise ``IndexDamagedError`` when the MANIFEST that ``index/CURRENT`` names has a damaged record; a new
    index (no CURRENT yet) and one whose CURRENT names no readable file are left to RocksDB."""
    try:
        name = (index / "CURRENT").read_text().strip()
        data = (index / name).read_bytes()
    except (OSError, ValueError):  # no CURRENT, or one naming no readable file
        return
    damage = first_damaged_record(data)
    if damage is not None:
        offset, why = damage
        raise IndexDamagedError(
            f"RocksDB index {index}: {name} is damaged (the record at byte {offset}: {why}), so RocksDB cannot "
            "tell which table files hold the index")
