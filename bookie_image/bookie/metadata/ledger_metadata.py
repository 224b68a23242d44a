"""Ledger metadata as stored in ZooKeeper (``LedgerMetadataSerDe``).

Format 3 (BookKeeper >= 4.9, what we write): ``"BookieMetadataFormatVersion\\t3\\n"`` followed by a
varint32-length-delimited ``LedgerMetadataFormat`` protobuf. Format 2 (same header with ``2``, then the
protobuf text format) is parsed too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from google.protobuf import text_format
from google.protobuf.internal import decoder, encoder

from bookie.protocol.entry import DigestType
from bookie.protocol.proto import DataFormats_pb2 as _df

df: Any = _df  # generated module (attributes invisible to mypy)

HEADER_KEY = b"BookieMetadataFormatVersion\t"
CURRENT_FORMAT_VERSION = 3
_MAX_VERSION_DIGITS = 10


class MetadataFormatError(ValueError):
    """Bytes that are not valid ledger metadata."""


class LedgerState(IntEnum):
    OPEN = 1
    IN_RECOVERY = 2
    CLOSED = 3


@dataclass(frozen=True)
class LedgerMetadata:
    """One ledger's metadata. ``ensembles`` maps first entry id -> bookie ids, ascending."""

    ensemble_size: int
    write_quorum_size: int
    ack_quorum_size: int
    ensembles: Mapping[int, tuple[str, ...]]
    state: LedgerState = LedgerState.OPEN
    last_entry_id: int = -1
    length: int = 0
    digest_type: DigestType | None = DigestType.CRC32C
    password: bytes | None = b""
    ctime: int | None = None
    custom_metadata: Mapping[str, bytes] = field(default_factory=dict)
    c_token: int = 0
    format_version: int = CURRENT_FORMAT_VERSION

    def __post_init__(self) -> None:
        # Normalise so equality does not depend on how the caller built the mapping.
        ordered = {int(k): tuple(v) for k, v in sorted(self.ensembles.items())}
        object.__setattr__(self, "ensembles", ordered)
        object.__setattr__(self, "custom_metadata", dict(self.custom_metadata))

    @property
    def closed(self) -> bool:
        return self.state is LedgerState.CLOSED

    def ensemble_at(self, entry_id: int) -> tuple[str, ...]:
        """The ensemble that stores ``entry_id`` (last segment starting at or before it)."""
        chosen: tuple[str, ...] = ()
        for first, ensemble in self.ensembles.items():
            if first > entry_id:
                break
            chosen = ensemble
        return chosen

    def bookies(self) -> set[str]:
        """Every bookie that appears in any ensemble of the ledger."""
        return {b for ensemble in self.ensembles.values() for b in ensemble}


def _to_format(md: LedgerMetadata, include_ctoken: bool) -> Any:
    fmt = df.LedgerMetadataFormat(
        quorumSize=md.write_quorum_size, ackQuorumSize=md.ack_quorum_size, ensembleSize=md.ensemble_size,
        length=md.length, lastEntryId=md.last_entry_id, state=int(md.state))
    if md.ctime is not None:
        fmt.ctime = md.ctime
    if md.digest_type is not None:
        fmt.digestType = int(md.digest_type)
    fmt.password = md.password or b""
    for key, value in md.custom_metadata.items():
        fmt.customMetadata.add(key=key, value=value)
    for first, ensemble in md.ensembles.items():
        fmt.segment.add(firstEntryId=first, ensembleMember=list(ensemble))
    if include_ctoken:
        fmt.cToken = md.c_token
    return fmt


def serialize_ledger_metadata(md: LedgerMetadata) -> bytes:
    """Format 3 bytes (or format 2 text if ``md.format_version == 2``)."""
    if md.format_version == 2:
        text = text_format.MessageToString(_to_format(md, include_ctoken=False))
        return HEADER_KEY + b"2\n" + text.encode()
    if md.format_version != 3:
        raise ValueError(f"cannot write ledger metadata format {md.format_version}")
    payload = _to_format(md, include_ctoken=True).SerializeToString()
    return HEADER_KEY + b"3\n" + encoder._VarintBytes(len(payload)) + payload


def _read_header(data: bytes) -> tuple[int, int]:
    """(format version, offset of the body)."""
    if not data.startswith(HEADER_KEY):
        raise MetadataFormatError("ledger metadata header corrupt")
    end = data.find(b"\n", len(HEADER_KEY), len(HEADER_KEY) + _MAX_VERSION_DIGITS + 1)
    if end < 0:
        raise MetadataFormatError("unable to find end of the metadata format version")
    digits = data[len(HEADER_KEY):end]
    if not digits.isdigit():
        raise MetadataFormatError(f"unable to parse metadata format version from {digits!r}")
    return int(digits), end + 1


def parse_ledger_metadata(data: bytes) -> LedgerMetadata:
    """Parse format 3 or 2; raises ``MetadataFormatError``."""
    version, offset = _read_header(bytes(data))
    fmt = df.LedgerMetadataFormat()
    try:
        if version == 3:
            size, pos = decoder._DecodeVarint32(data, offset)
            if pos + size > len(data):
                raise MetadataFormatError("truncated ledger metadata")
            fmt.ParseFromString(data[pos:pos + size])
        elif version == 2:
            text_format.Parse(data[offset:].decode(), fmt)
        else:
            raise MetadataFormatError(f"ledger metadata format {version} is not supported")
    except MetadataFormatError:
        raise
    except Exception as exc:
        raise MetadataFormatError(f"invalid ledger metadata: {exc}") from exc
    if not fmt.IsInitialized():
        raise MetadataFormatError(f"ledger metadata misses {fmt.FindInitializationErrors()}")
    return _from_format(fmt, version)


def _from_format(fmt: Any, version: int) -> LedgerMetadata:
    state = LedgerState(fmt.state)
    closed = state is LedgerState.CLOSED
    has_password = fmt.HasField("password")
    return LedgerMetadata(
        ensemble_size=fmt.ensembleSize,
        write_quorum_size=fmt.quorumSize,
        ack_quorum_size=fmt.ackQuorumSize if fmt.HasField("ackQuorumSize") else fmt.quorumSize,
        ensembles={s.firstEntryId: tuple(s.ensembleMember) for s in fmt.segment},
        state=state,
        # As BookKeeper: lastEntryId and length are only meaningful once the ledger is closed.
        last_entry_id=fmt.lastEntryId if closed else -1,
        length=fmt.length if closed else 0,
        digest_type=DigestType(fmt.digestType) if has_password and fmt.HasField("digestType") else None,
        password=fmt.password if has_password else None,
        ctime=fmt.ctime if fmt.HasField("ctime") else None,
        custom_metadata={e.key: e.value for e in fmt.customMetadata},
        c_token=fmt.cToken if fmt.HasField("cToken") else 0,
        format_version=version,
    )


def new_ledger_metadata(ensemble: Sequence[str], write_quorum_size: int, ack_quorum_size: int, *,
                        digest_type: DigestType = DigestType.CRC32C, password: bytes = b"",
                        ctime: int | None = None, custom_metadata: Mapping[str, bytes] | None = None,
                        ) -> LedgerMetadata:
    """Metadata of a freshly created (open) ledger with one ensemble starting at entry 0."""
    if not 0 < ack_quorum_size <= write_quorum_size <= len(ensemble):
        raise ValueError("need 0 < ackQuorum <= writeQuorum <= ensembleSize")
    return LedgerMetadata(
        ensemble_size=len(ensemble), write_quorum_size=write_quorum_size, ack_quorum_size=ack_quorum_size,
        ensembles={0: tuple(ensemble)}, digest_type=digest_type, password=password, ctime=ctime,
        custom_metadata=dict(custom_metadata or {}))
