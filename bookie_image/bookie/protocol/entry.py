"""The entry format written by BookKeeper clients, digests, master key, explicit LAC and entry availability.

An entry is ``ledgerId(8) | entryId(8) | lastAddConfirmed(8) | length(8) | digest(N) | payload``; the digest
covers the 32-byte header then the payload. The bookie stores entries verbatim and only reads the header;
clients (``bookie.client``) package and verify entries with the digest managers below.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import crc32c as _crc32c

METADATA_LENGTH = 32  # entry header bytes covered by the digest
LAC_METADATA_LENGTH = 16  # explicit-LAC packet: ledgerId | lac
MASTER_KEY_LENGTH = 20

_HEADER = struct.Struct(">qqqq")
_LAC = struct.Struct(">qq")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview


class DigestType(IntEnum):
    """``LedgerMetadataFormat.DigestType``."""

    CRC32 = 1
    HMAC = 2
    CRC32C = 3
    DUMMY = 4


class DigestMismatch(Exception):
    """An entry (or LAC packet) whose digest, ledger id or entry id is not what the reader expects."""


class MalformedEntry(ValueError):
    """Bytes too short to be an entry."""


class EntryHeader(NamedTuple):
    ledger_id: int
    entry_id: int
    last_add_confirmed: int
    length: int


def parse_entry_header(entry: Buffer) -> EntryHeader:
    """The 32-byte header of a stored entry (ledgerId, entryId, LAC, cumulative length)."""
    if len(entry) < METADATA_LENGTH:
        raise MalformedEntry(f"entry of {len(entry)} bytes is shorter than its {METADATA_LENGTH}-byte header")
    return EntryHeader(*_HEADER.unpack_from(entry, 0))


def generate_master_key(password: bytes) -> bytes:
    """``DigestManager.generateMasterKey``: SHA1("ledger" + password); stored by bookies, not a digest key."""
    return hashlib.sha1(b"ledger" + password).digest()


# ---------------------------------------------------------------- digest managers


class DigestManager:
    """Computes the digest of header + payload for one ledger (one digest type and password)."""

    digest_type: DigestType
    digest_length: int

    def compute(self, parts: Iterable[Buffer]) -> bytes:
        raise NotImplementedError


class Crc32DigestManager(DigestManager):
    """java.util.zip.CRC32, written as an int64 (value 0..2^32-1)."""

    digest_type = DigestType.CRC32
    digest_length = 8

    def compute(self, parts: Iterable[Buffer]) -> bytes:
        crc = 0
        for part in parts:
            crc = zlib.crc32(part, crc)
        return _INT64.pack(crc)


class Crc32cDigestManager(DigestManager):
    """CRC32C (Castagnoli) as a 4-byte big-endian int."""

    digest_type = DigestType.CRC32C
    digest_length = 4

    def compute(self, parts: Iterable[Buffer]) -> bytes:
        crc = 0
        for part in parts:
            crc = _crc32c.crc32c(part, crc)
        return _UINT32.pack(crc)


class MacDigestManager(DigestManager):
    """HmacSHA1 keyed with SHA1("mac" + password)."""

    digest_type = DigestType.HMAC
    digest_length = 20

    def __init__(self, password: bytes) -> None:
        self._key = hashlib.sha1(b"mac" + password).digest()

    def compute(self, parts: Iterable[Buffer]) -> bytes:
        mac = hmac.new(self._key, digestmod=hashlib.sha1)
        for part in parts:
            mac.update(part)
        return mac.digest()


class DummyDigestManager(DigestManager):
    digest_type = DigestType.DUMMY
    digest_length = 0

    def compute(self, parts: Iterable[Buffer]) -> bytes:
        return b""


def digest_manager(digest_type: DigestType | int, password: bytes = b"") -> DigestManager:
    """The digest manager of a ledger (the password matters only for HMAC)."""
    kind = DigestType(digest_type)
    if kind is DigestType.CRC32:
        return Crc32DigestManager()
    if kind is DigestType.CRC32C:
        return Crc32cDigestManager()
    if kind is DigestType.HMAC:
        return MacDigestManager(password)
    return DummyDigestManager()


# ---------------------------------------------------------------- entries


def package_entry(manager: DigestManager, ledger_id: int, entry_id: int, last_add_confirmed: int,
                  length: int, payload: Buffer) -> bytes:
    """The entry bytes a client sends (``length`` = ledger length including this payload)."""
    header = _HEADER.pack(ledger_id, entry_id, last_add_confirmed, length)
    return b"".join((header, manager.compute((header, payload)), payload))


def verify_entry(manager: DigestManager, entry: Buffer, *, ledger_id: int | None = None,
                 entry_id: int | None = None) -> memoryview:
    """Check the digest (and the expected ids) of a stored entry; returns its payload without copying."""
    n = manager.digest_length
    if len(entry) < METADATA_LENGTH + n:
        raise DigestMismatch(f"entry of {len(entry)} bytes is shorter than header + {n}-byte digest")
    view = memoryview(entry)
    header = parse_entry_header(view)
    if ledger_id is not None and header.ledger_id != ledger_id:
        raise DigestMismatch(f"entry belongs to ledger {header.ledger_id}, expected {ledger_id}")
    if entry_id is not None and header.entry_id != entry_id:
        raise DigestMismatch(f"entry is {header.entry_id}, expected {entry_id}")
    payload = view[METADATA_LENGTH + n:]
    expected = manager.compute((view[:METADATA_LENGTH], payload))
    if not hmac.compare_digest(expected, view[METADATA_LENGTH:METADATA_LENGTH + n]):
        raise DigestMismatch(f"digest mismatch for ledger {header.ledger_id} entry {header.entry_id}")
    return payload


def package_lac(manager: DigestManager, ledger_id: int, lac: int) -> bytes:
    """Explicit-LAC packet (WRITE_LAC body): ledgerId | lac | digest over those 16 bytes."""
    header = _LAC.pack(ledger_id, lac)
    return header + manager.compute((header,))


def verify_lac(manager: DigestManager, packet: Buffer, *, ledger_id: int | None = None) -> int:
    """The LAC in an explicit-LAC packet, after checking its digest."""
    n = manager.digest_length
    if len(packet) < LAC_METADATA_LENGTH + n:
        raise DigestMismatch(f"LAC packet of {len(packet)} bytes is too short")
    view = memoryview(packet)
    packet_ledger, lac = _LAC.unpack_from(view, 0)
    if ledger_id is not None and packet_ledger != ledger_id:
        raise DigestMismatch(f"LAC packet of ledger {packet_ledger}, expected {ledger_id}")
    expected = manager.compute((view[:LAC_METADATA_LENGTH],))
    if not hmac.compare_digest(expected, view[LAC_METADATA_LENGTH:LAC_METADATA_LENGTH + n]):
        raise DigestMismatch(f"LAC digest mismatch for ledger {packet_ledger}")
    return int(lac)


# ---------------------------------------------------------------- AvailabilityOfEntriesOfLedger

AVAILABILITY_HEADER_SIZE = 64
AVAILABILITY_VERSION = 0
_AV_HEADER = struct.Struct(">ii")
_AV_GROUP = struct.Struct(">qqii")  # firstSequenceStart, lastSequenceStart, sequenceSize, sequencePeriod


@dataclass(frozen=True, slots=True)
class SequenceGroup:
    """Runs of ``size`` consecutive ids, one every ``period`` ids, ``first_start``..``last_start``."""

    first_start: int
    last_start: int
    size: int
    period: int

    def __contains__(self, entry_id: object) -> bool:
        if not isinstance(entry_id, int) or not self.first_start <= entry_id < self.last_start + self.size:
            return False
        offset = entry_id - self.first_start
        return (offset if self.period == 0 else offset % self.period) < self.size

    def __iter__(self) -> Iterator[int]:
        start = self.first_start
        while start <= self.last_start:
            yield from range(start, start + self.size)
            if self.period <= 0:
                return
            start += self.period


def _runs(entry_ids: Iterable[int]) -> Iterator[tuple[int, int]]:
    """(start, size) of each run of consecutive ids, ascending, duplicates ignored."""
    start = size = -1
    for entry_id in sorted(set(entry_ids)):
        if size > 0 and entry_id == start + size:
            size += 1
            continue
        if size > 0:
            yield start, size
        start, size = entry_id, 1
    if size > 0:
        yield start, size


def encode_availability(entry_ids: Iterable[int]) -> bytes:
    """BookKeeper's ``AvailabilityOfEntriesOfLedger`` serialization of a set of entry ids.

    As in BookKeeper, every run of consecutive ids becomes its own group with period 0 (a group created from
    one run records that run's start as its last start, so no later run ever joins it).
    """
    groups = [_AV_GROUP.pack(start, start, size, 0) for start, size in _runs(entry_ids)]
    header = bytearray(AVAILABILITY_HEADER_SIZE)
    _AV_HEADER.pack_into(header, 0, AVAILABILITY_VERSION, len(groups))
    return bytes(header) + b"".join(groups)


def decode_availability(data: Buffer) -> list[SequenceGroup]:
    """Parse an ``AvailabilityOfEntriesOfLedger`` buffer into its sequence groups (sorted by start)."""
    if len(data) < AVAILABILITY_HEADER_SIZE:
        raise ValueError(f"availability of {len(data)} bytes is shorter than its header")
    version, count = _AV_HEADER.unpack_from(data, 0)
    if version > AVAILABILITY_VERSION:
        raise ValueError(f"unsupported availability header version {version}")
    if count < 0 or len(data) < AVAILABILITY_HEADER_SIZE + count * _AV_GROUP.size:
        raise ValueError(f"availability announces {count} groups but has {len(data)} bytes")
    groups = [SequenceGroup(*_AV_GROUP.unpack_from(data, AVAILABILITY_HEADER_SIZE + i * _AV_GROUP.size))
              for i in range(count)]
    return sorted(groups, key=lambda g: g.first_start)


def available_entries(data: Buffer) -> list[int]:
    """All entry ids in an ``AvailabilityOfEntriesOfLedger`` buffer, ascending."""
    return sorted({e for group in decode_availability(data) for e in group})
