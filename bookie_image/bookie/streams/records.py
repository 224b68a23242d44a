"""The record format of a stream: one record per ledger entry.

    byte    format version (1)
    byte    flags: 1 = has key, 2 = tombstone (value is null)
    int64   position (the stream offset; kept by compaction so positions are stable)
    int64   timestamp, milliseconds since the epoch
    int32   key length   + key bytes   (only with flag 1)
    int32   value length + value bytes (absent for a tombstone)

Big-endian, like BookKeeper's own framing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

FORMAT_VERSION = 1
_HEAD = struct.Struct(">BBqq")
_LEN = struct.Struct(">i")
HAS_KEY = 1
TOMBSTONE = 2


class RecordFormatError(ValueError):
    """Bytes that are not a stream record."""


@dataclass(frozen=True, slots=True)
class Record:
    position: int
    key: bytes | None
    value: bytes | None  # None: a tombstone (deletes ``key`` on compaction)
    timestamp: int  # ms since the epoch

    @property
    def tombstone(self) -> bool:
        return self.value is None


def encode(record: Record) -> bytes:
    flags = (HAS_KEY if record.key is not None else 0) | (TOMBSTONE if record.value is None else 0)
    parts = [_HEAD.pack(FORMAT_VERSION, flags, record.position, record.timestamp)]
    if record.key is not None:
        parts += [_LEN.pack(len(record.key)), record.key]
    if record.value is not None:
        parts += [_LEN.pack(len(record.value)), record.value]
    return b"".join(parts)


def decode(data: bytes) -> Record:
    if len(data) < _HEAD.size:
        raise RecordFormatError(f"record of {len(data)} bytes is shorter than its {_HEAD.size}-byte header")
    version, flags, position, timestamp = _HEAD.unpack_from(data)
    if version != FORMAT_VERSION:
        raise RecordFormatError(f"unknown record format version {version}")
    at = _HEAD.size
    key = value = None

    def take() -> bytes:
        nonlocal at
        if at + _LEN.size > len(data):
            raise RecordFormatError("truncated record")
        (n,) = _LEN.unpack_from(data, at)
        at += _LEN.size
        if n < 0 or at + n > len(data):
            raise RecordFormatError("truncated record")
        out = data[at:at + n]
        at += n
        return bytes(out)

    if flags & HAS_KEY:
        key = take()
    if not flags & TOMBSTONE:
        value = take()
    if at != len(data):
        raise RecordFormatError(f"{len(data) - at} trailing bytes after the record")
    return Record(position, key, value, timestamp)


def encoded_size(key: bytes | None, value: bytes | None) -> int:
    return _HEAD.size + (_LEN.size + len(key) if key is not None else 0) + \
        (_LEN.size + len(value) if value is not None else 0)
