"""BookKeeper's journal file format, pure: header, records, padding and the meta records.

A journal is a 512-byte header (``"BKLG"``, format version) then records ``int32 len | payload``; before each
group flush a padding record (``int32 0xFFFFFF00 | int32 padLen | zeros``) aligns the data. The payload
starts with ledger id and entry id; negative entry ids mark meta records (master key, fence, explicit LAC).
A zero length is the preallocated tail: the end of the journal.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

import crc32c

MAGIC = b"BKLG"
HEADER_SIZE = 512
FORMAT_V5 = 5
FORMAT_V6 = 6  # adds explicit LAC records
PADDING_MASK = -0x100  # 0xFFFFFF00 read as a signed int32
META_LEDGER_KEY = -0x1000
META_FENCE = -0x2000
META_FORCE_LEDGER = -0x4000
META_EXPLICIT_LAC = -0x8000

GROUP_CHECKSUM_MAGIC = b"BFCK"  # in the header: groups end with a checksummed padding record
_INT32 = struct.Struct(">i")
_IDS = struct.Struct(">qq")
_HEAD = struct.Struct(">4si")
_TRAILER = struct.Struct(">4sII")  # magic, crc32c of the group's bytes, group length

Buffer = bytes | bytearray | memoryview


class CorruptJournal(ValueError):
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"journal corrupt at offset {offset}: {reason}")
        self.offset = offset


def encode_header(version: int = FORMAT_V6, group_checksums: bool = True) -> bytes:
    """The 512-byte header. BookKeeper reads only magic and version; we mark checksummed groups after them."""
    head = _HEAD.pack(MAGIC, version) + (GROUP_CHECKSUM_MAGIC if group_checksums else b"")
    return head + bytes(HEADER_SIZE - len(head))


def has_group_checksums(buf: Buffer) -> bool:
    return bytes(buf[_HEAD.size:_HEAD.size + 4]) == GROUP_CHECKSUM_MAGIC


def decode_header(buf: Buffer) -> int:
    """The format version; raises ``CorruptJournal`` for anything but a V5/V6 header."""
    if len(buf) < _HEAD.size:
        raise CorruptJournal(0, "file shorter than a journal header")
    magic, version = _HEAD.unpack_from(buf, 0)
    if magic != MAGIC or not FORMAT_V5 <= version <= FORMAT_V6:
        raise CorruptJournal(0, f"not a V5/V6 journal header (magic {bytes(magic)!r}, version {version})")
    return int(version)


def group_trailer(position: int, alignment: int, group: Buffer) -> bytes:
    """Padding record closing a group: aligns like ``padding`` and carries the group's CRC32C.

    BookKeeper's readers skip padding bodies, so journals stay readable by them; ours detect a group torn by
    a crash (its records are then never replayed: they were never acknowledged).
    """
    gap = 8 + _TRAILER.size
    if alignment > 0:
        gap += (alignment - (position + gap) % alignment) % alignment
    body = _TRAILER.pack(GROUP_CHECKSUM_MAGIC, crc32c.crc32c(bytes(group)), len(group))
    return _INT32.pack(PADDING_MASK) + _INT32.pack(gap - 8) + body + bytes(gap - 8 - len(body))


def frame(payload: Buffer) -> bytes:
    return _INT32.pack(len(payload)) + bytes(payload)


def padding(position: int, alignment: int) -> bytes:
    """The padding record that brings ``position`` to a multiple of ``alignment`` (none when aligned)."""
    if alignment <= 0 or position % alignment == 0:
        return b""
    gap = alignment - position % alignment
    while gap < 8:  # the padding record itself needs 8 bytes
        gap += alignment
    return _INT32.pack(PADDING_MASK) + _INT32.pack(gap - 8) + bytes(gap - 8)


def master_key_payload(ledger_id: int, master_key: bytes) -> bytes:
    return _IDS.pack(ledger_id, META_LEDGER_KEY) + _INT32.pack(len(master_key)) + master_key


def fence_payload(ledger_id: int) -> bytes:
    return _IDS.pack(ledger_id, META_FENCE)


def explicit_lac_payload(ledger_id: int, lac_body: bytes) -> bytes:
    return _IDS.pack(ledger_id, META_EXPLICIT_LAC) + _INT32.pack(len(lac_body)) + lac_body


class Kind(Enum):
    ENTRY = "entry"
    MASTER_KEY = "master-key"
    FENCE = "fence"
    EXPLICIT_LAC = "explicit-lac"
    UNKNOWN = "unknown-meta"


@dataclass(frozen=True, slots=True)
class JournalRecord:
    offset: int        # of the length prefix
    end: int           # offset just after the record
    kind: Kind
    ledger_id: int
    entry_id: int
    data: bytes        # entry bytes, master key or LAC body; empty for a fence


def parse_payload(offset: int, end: int, payload: Buffer) -> JournalRecord:
    if len(payload) < _IDS.size:
        raise CorruptJournal(offset, f"record of {len(payload)} bytes is shorter than its ids")
    ledger_id, entry_id = _IDS.unpack_from(payload, 0)
    if entry_id >= 0:
        return JournalRecord(offset, end, Kind.ENTRY, ledger_id, entry_id, bytes(payload))
    if entry_id in (META_LEDGER_KEY, META_EXPLICIT_LAC):
        (n,) = _INT32.unpack_from(payload, _IDS.size)
        data = bytes(payload[_IDS.size + 4:_IDS.size + 4 + n])
        kind = Kind.MASTER_KEY if entry_id == META_LEDGER_KEY else Kind.EXPLICIT_LAC
        return JournalRecord(offset, end, kind, ledger_id, entry_id, data)
    if entry_id == META_FENCE:
        return JournalRecord(offset, end, Kind.FENCE, ledger_id, entry_id, b"")
    return JournalRecord(offset, end, Kind.UNKNOWN, ledger_id, entry_id, b"")


def iter_journal(buf: Buffer, start: int = HEADER_SIZE,
                 damaged: list[CorruptJournal] | None = None) -> Iterator[JournalRecord]:
    """Records from ``start`` until the preallocated zeros or a torn tail (a group cut by a crash).

    In journals with group checksums, a group's records are yielded only once its trailer's CRC32C matches;
    a damaged group (bad checksum, impossible length, cut by zeros) with no valid group after it is the torn
    tail: the scan ends there quietly (none of its adds was acknowledged). Groups are written one after the
    other, each only once the previous one is durable, so a damaged group *followed by a valid one* is damage
    to acknowledged data: ``CorruptJournal`` at the damaged group's offset, raised, or, when ``damaged`` is
    given, appended to it while the scan goes on with the valid group (the records after the damage are not
    lost with it). Zeros where a group should start end the scan only if no valid group follows them either.
    Journals without group checksums (BookKeeper's) are read as BookKeeper reads them: a negative length that
    is not padding raises.
    """
    view = memoryview(buf)
    checked = has_group_checksums(view)
    pending: list[JournalRecord] = []
    group_start = pos = start
    while pos + 4 <= len(view):
        (length,) = _INT32.unpack_from(view, pos)
        problem = _problem_at(view, pos, length, group_start, checked)
        if problem is None:
            if length == PADDING_MASK:  # the end of a group
                yield from pending
                pending.clear()
                pos += 8 + _INT32.unpack_from(view, pos + 4)[0]
                group_start = pos
            else:
                end = pos + 4 + length
                pending.append(parse_payload(pos, end, view[pos + 4:end]))
                pos = end
            continue
        if problem == _END and not checked:
            break  # the preallocated zeros, or a record torn by a crash
        if not checked:
            raise CorruptJournal(pos, problem)
        resume = _valid_group_after(buf, view, group_start)
        if resume is None:
            return  # the preallocated zeros, or the torn tail: nothing after it was acknowledged
        if problem == _END:
            problem = "zeros where a record should be"
        error = CorruptJournal(group_start, f"a damaged group ({problem}) is followed by a valid one at offset "
                                            f"{resume}: acknowledged records would be lost")
        if damaged is None:
            raise error
        damaged.append(error)
        pending.clear()
        group_start = pos = resume
    if not checked:
        yield from pending


_END = "end"


def _problem_at(view: memoryview, pos: int, length: int, group_start: int, checked: bool) -> str | None:
    """What is wrong with the record at ``pos`` (``_END``: zeros, or a record running past the file), or None."""
    if length == PADDING_MASK:
        if pos + 8 > len(view):
            return _END
        (pad,) = _INT32.unpack_from(view, pos + 4)
        if pad < 0 or pos + 8 + pad > len(view):
            return f"bad padding length {pad}"
        if checked and not _trailer_matches(view, group_start, pos, pad):
            return "checksum mismatch"
        return None
    if length < 0:
        return f"negative record length {length}"
    if length == 0 or pos + 4 + length > len(view):
        return _END
    if length < _IDS.size:
        return f"record of {length} bytes is shorter than its ids"
    return None


_PADDING_PREFIX = struct.pack(">i", PADDING_MASK)


def _valid_group_after(buf: Buffer, view: memoryview, bad_start: int) -> int | None:
    """Offset of the first group with a valid trailer that starts after ``bad_start``, or None."""
    data = buf if isinstance(buf, bytes) else bytes(view)
    at = data.find(_PADDING_PREFIX, bad_start + 1)
    while at >= 0 and at + 8 + _TRAILER.size <= len(data):
        (pad,) = _INT32.unpack_from(data, at + 4)
        magic, _, length = _TRAILER.unpack_from(data, at + 8)
        start = at - length
        if magic == GROUP_CHECKSUM_MAGIC and start > bad_start and _trailer_matches(view, start, at, pad):
            return start
        at = data.find(_PADDING_PREFIX, at + 1)
    return None


def _trailer_matches(view: memoryview, group_start: int, pos: int, pad: int) -> bool:
    if pad < _TRAILER.size:
        return False
    magic, crc, length = _TRAILER.unpack_from(view, pos + 8)
    if magic != GROUP_CHECKSUM_MAGIC or length != pos - group_start:
        return False
    return bool(crc32c.crc32c(bytes(view[group_start:pos])) == crc)


def journal_file_name(log_id: int) -> str:
    return f"{log_id:x}.txn"


def parse_journal_file_name(name: str) -> int | None:
    stem, _, ext = name.partition(".")
    if ext != "txn":
        return None
    try:
        return int(stem, 16)
    except ValueError:
        return None
