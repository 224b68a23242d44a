"""RocksDB's log format (a MANIFEST, a write-ahead log) as the tests of ``bookie.storage.index_logs`` need it: the
offsets of a small log's records, and records made with their checksum right."""

from __future__ import annotations

import crc32c

TYPE_OFFSET = 6  # in a record's header: masked CRC32C (4), length (2), type (1)
RECYCLABLE_FULL = 5


def record_offsets(data: bytes) -> list[int]:
    """The offsets of a small log's records (all in its first block), read as plain (not recyclable) records."""
    offsets, pos = [], 0
    while pos + 7 <= len(data):
        offsets.append(pos)
        pos += 7 + int.from_bytes(data[pos + 4:pos + 6], "little")
    return offsets


def make_record(record_type: int, payload: bytes, log_number: int | None = None) -> bytes:
    """A record with its checksum right, masked as RocksDB masks it; a recyclable one names ``log_number``."""
    body = bytes([record_type]) + (log_number.to_bytes(4, "little") if log_number is not None else b"") + payload
    crc = crc32c.crc32c(body)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return masked.to_bytes(4, "little") + len(payload).to_bytes(2, "little") + body
