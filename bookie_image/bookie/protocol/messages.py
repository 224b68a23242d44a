"""Protocol-neutral requests and responses of the bookie protocol.

One dataclass per operation, treated as immutable but not ``frozen``: a frozen dataclass builds itself with
one ``object.__setattr__`` per field, which made an ``AddRequest`` and its ``Wire`` cost about 1.5 us each time,
three times a plain slotted one, on the path every add takes (twice: in the client and in the bookie).
Every request and response carries a ``Wire`` saying how it travelled
(v2 binary or v3 protobuf, txnId, the v2 version byte), so a response is encoded the way its request came
in and a client can match responses to requests. Entry bodies are ``bytes`` or zero-copy ``memoryview``
slices of the received frame; they are stored verbatim (the bookie never parses the payload).
"""

from __future__ import annotations

from dataclasses import dataclass

from bookie.protocol.codes import StatusCode

Body = bytes | memoryview

# BookKeeper's v2 batch read limits (``maxBatchReadSize``) and the fixed bytes of a batch read response frame:
# frame length(4) + header(4) + rc(4) + ledgerId(8) + startEntryId(8) + requestId(8).
MAX_BATCH_READ_SIZE = 5 * 1024 * 1024
BATCH_READ_RESPONSE_OVERHEAD = 36
BATCH_READ_PER_ENTRY_OVERHEAD = 4


@dataclass(slots=True)
class Wire:
    """How a message travels: ``version`` 2 (binary) or 3 (protobuf).

    ``protocol_version`` is the v2 header version byte (0..2 accepted by a bookie) or the v3
    ``BKPacketHeader.version`` (3 expected). ``txn_id`` matches v3 responses to requests (unused by v2).
    ``high_priority``: v3 ``priority > 0`` or the v2 HIGH_PRIORITY flag (recovery adds, fencing reads).
    """

    version: int
    txn_id: int = 0
    protocol_version: int = 2
    high_priority: bool = False

    @staticmethod
    def v2(high_priority: bool = False, protocol_version: int = 2) -> Wire:
        return Wire(2, 0, protocol_version, high_priority)

    @staticmethod
    def v3(txn_id: int, high_priority: bool = False) -> Wire:
        return Wire(3, txn_id, 3, high_priority)


# ---------------------------------------------------------------- requests


@dataclass(slots=True)
class AddRequest:
    """Add an entry. ``body`` is the whole entry as the client packaged it (header, digest, payload)."""

    wire: Wire
    ledger_id: int
    entry_id: int
    master_key: bytes
    body: Body
    recovery: bool = False
    write_flags: int = 0  # v3 writeFlags; bit 0 = DEFERRED_SYNC

    @property
    def deferred_sync(self) -> bool:
        return bool(self.write_flags & 1)


@dataclass(slots=True)
class ReadRequest:
    """Read an entry (``entry_id`` -1 = last entry); optionally fencing, long poll, piggyback."""

    wire: Wire
    ledger_id: int
    entry_id: int
    fence: bool = False
    master_key: bytes | None = None
    previous_lac: int | None = None  # v3 long poll
    timeout_ms: int | None = None  # v3 long poll timeout
    piggyback: bool = False  # v3 ENTRY_PIGGYBACK


@dataclass(slots=True)
class BatchReadRequest:
    """v2-only batch read: up to ``max_count`` entries (<=0 unlimited) and ``max_size`` bytes."""

    wire: Wire
    ledger_id: int
    start_entry_id: int
    request_id: int
    max_count: int
    max_size: int
    fence: bool = False
    master_key: bytes | None = None


@dataclass(slots=True)
class ReadLacRequest:
    wire: Wire
    ledger_id: int


@dataclass(slots=True)
class WriteLacRequest:
    """Explicit LAC: ``body`` = ledgerId(8) | lac(8) | digest, stored verbatim."""

    wire: Wire
    ledger_id: int
    lac: int
    master_key: bytes
    body: Body


@dataclass(slots=True)
class ForceLedgerRequest:
    wire: Wire
    ledger_id: int


@dataclass(slots=True)
class GetBookieInfoRequest:
    wire: Wire
    requested: int = 0  # bitmask of TOTAL_DISK_CAPACITY (1) / FREE_DISK_SPACE (2)


@dataclass(slots=True)
class GetListOfEntriesOfLedgerRequest:
    wire: Wire
    ledger_id: int


@dataclass(slots=True)
class AuthRequest:
    wire: Wire
    plugin_name: str
    payload: bytes


@dataclass(slots=True)
class StartTLSRequest:
    wire: Wire


@dataclass(slots=True)
class UnsupportedRequest:
    """A well-formed v3 request the bookie does not serve (unknown/range/batch op, or missing body).

    BookKeeper answers these with ``Response{status=EBADREQ}``; ``operation`` is echoed in the header.
    """

    wire: Wire
    operation: int
    reason: str = ""


Request = (
    AddRequest | ReadRequest | BatchReadRequest | ReadLacRequest | WriteLacRequest | ForceLedgerRequest
    | GetBookieInfoRequest | GetListOfEntriesOfLedgerRequest | AuthRequest | StartTLSRequest
    | UnsupportedRequest
)


# ---------------------------------------------------------------- responses


@dataclass(slots=True)
class AddResponse:
    wire: Wire
    status: StatusCode
    ledger_id: int
    entry_id: int


@dataclass(slots=True)
class ReadResponse:
    """``body`` is the full stored entry (only on EOK); ``max_lac``/``lac_update_timestamp`` are v3 only."""

    wire: Wire
    status: StatusCode
    ledger_id: int
    entry_id: int
    body: Body | None = None
    max_lac: int | None = None
    lac_update_timestamp: int | None = None


@dataclass(slots=True)
class BatchReadResponse:
    wire: Wire
    status: StatusCode
    ledger_id: int
    start_entry_id: int
    request_id: int
    entries: tuple[Body, ...] = ()


@dataclass(slots=True)
class ReadLacResponse:
    wire: Wire
    status: StatusCode
    ledger_id: int
    lac_body: Body | None = None  # explicit LAC as written by WRITE_LAC
    last_entry_body: Body | None = None  # last entry of the ledger on this bookie


@dataclass(slots=True)
class WriteLacResponse:
    wire: Wire
    status: StatusCode
    ledger_id: int


@dataclass(slots=True)
class ForceLedgerResponse:
    wire: Wire
    status: StatusCode
    ledger_id: int


@dataclass(slots=True)
class GetBookieInfoResponse:
    wire: Wire
    status: StatusCode
    total_disk_capacity: int | None = None
    free_disk_space: int | None = None


@dataclass(slots=True)
class GetListOfEntriesOfLedgerResponse:
    wire: Wire
    status: StatusCode
    ledger_id: int
    availability: bytes | None = None  # AvailabilityOfEntriesOfLedger encoding (see bookie.protocol.entry)


@dataclass(slots=True)
class AuthResponse:
    wire: Wire
    status: StatusCode
    plugin_name: str = ""
    payload: bytes = b""


@dataclass(slots=True)
class StartTLSResponse:
    wire: Wire
    status: StatusCode


@dataclass(slots=True)
class ErrorResponse:
    """v3 ``Response`` with only a status (answer to an ``UnsupportedRequest``)."""

    wire: Wire
    status: StatusCode
    operation: int


Response = (
    AddResponse | ReadResponse | BatchReadResponse | ReadLacResponse | WriteLacResponse | ForceLedgerResponse
    | GetBookieInfoResponse | GetListOfEntriesOfLedgerResponse | AuthResponse | StartTLSResponse
    | ErrorResponse
)


def error_response(request: Request, status: StatusCode) -> Response:
    """The response to ``request`` that carries only ``status`` (ids echoed from the request)."""
    w = request.wire
    match request:
        case AddRequest():
            return AddResponse(w, status, request.ledger_id, request.entry_id)
        case ReadRequest():
            return ReadResponse(w, status, request.ledger_id, request.entry_id)
        case BatchReadRequest():
            return BatchReadResponse(w, status, request.ledger_id, request.start_entry_id, request.request_id)
        case ReadLacRequest():
            return ReadLacResponse(w, status, request.ledger_id)
        case WriteLacRequest():
            return WriteLacResponse(w, status, request.ledger_id)
        case ForceLedgerRequest():
            return ForceLedgerResponse(w, status, request.ledger_id)
        case GetBookieInfoRequest():
            return GetBookieInfoResponse(w, status)
        case GetListOfEntriesOfLedgerRequest():
            return GetListOfEntriesOfLedgerResponse(w, status, request.ledger_id)
        case AuthRequest():
            return AuthResponse(w, status)
        case StartTLSRequest():
            return StartTLSResponse(w, status)
        case UnsupportedRequest():
            return ErrorResponse(w, status, request.operation)
    raise TypeError(f"not a request: {request!r}")
