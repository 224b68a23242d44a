"""Frames <-> neutral messages, for both protocol versions: the bookie's side, and what both sides share.

Server side: ``decode_request(frame)`` (frame = payload without the 4-byte length) and
``encode_response(request, response)`` (complete frame with its length prefix).
The client side, ``encode_request(request)`` and ``decode_response(frame)``, is ``client_codec``.

Version detection per frame, as BookKeeper's ``RequestDecoder``: parse as a v3 protobuf ``Request`` first and
fall back to v2 when that fails. A v2 frame starts with its version byte (0, 1 or 2), which is never a valid
protobuf tag (field number 0), so those frames skip the protobuf attempt - the hot v2 add/read path costs
one ``struct`` unpack. ``decode_request`` raises ``MalformedFrame`` and nothing else.

Adds, the requests every written entry arrives in, are decoded by the C module ``_native`` in one pass over
the bytes (v3 and v2), and so is a v3 add's EOK answer; the other v3 requests go through protobuf's message
classes.

v2 requests whose version byte is above 2 are decoded (with ``wire.protocol_version`` set) so that the
processor can answer EBADVERSION as BookKeeper does.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message

from bookie.protocol import _native
from bookie.protocol import codes as c
from bookie.protocol import messages as m
from bookie.protocol.codes import OperationType as Op
from bookie.protocol.codes import StatusCode
from bookie.protocol.codes import V2Flag as F
from bookie.protocol.codes import V2OpCode as V2
from bookie.protocol.proto import BookkeeperProtocol_pb2 as _pb

pb: Any = _pb  # generated module: attributes are created at import time, invisible to mypy


class MalformedFrame(Exception):
    """A frame that is neither a valid v3 nor a valid v2 message; the connection must be closed."""


_INT = struct.Struct(">i")
_READ_REQ = struct.Struct(">iqq")  # header, ledgerId, entryId
_BATCH_REQ = struct.Struct(">iqqqiq")  # header, ledgerId, startEntryId, requestId, maxCount, maxSize
_RESP = struct.Struct(">iiiqq")  # frame length, header, rc, ledgerId, entryId
_BATCH_RESP = struct.Struct(">iiiqqq")  # frame length, header, rc, ledgerId, startEntryId, requestId
_RESP_BODY = struct.Struct(">iqq")  # rc, ledgerId, entryId (after the header, client side)
_BATCH_RESP_BODY = struct.Struct(">iqqq")

# Plain ints for the hot path: IntEnum/IntFlag attribute access and arithmetic cost microseconds.
_OP_ADD, _OP_READ, _OP_AUTH = int(V2.ADDENTRY), int(V2.READENTRY), int(V2.AUTH)
_OP_BATCH_READ = int(V2.BATCH_READ_ENTRY)
_FLAG_FENCE, _FLAG_RECOVERY, _FLAG_HIGH = int(F.DO_FENCING), int(F.RECOVERY_ADD), int(F.HIGH_PRIORITY)
# v2 wires are immutable and few: share them instead of building one per request.
_V2_WIRES = {(v, hp): m.Wire(2, 0, v, hp) for v in range(256) for hp in (False, True)}

V2_RESPONSE_SIZE = 24  # header + rc + ledgerId + entryId: every v2 add response and read error response
ENTRY_HEADER_SIZE = 32
_MK = c.MASTER_KEY_LENGTH
_V2_ENTRY_AT = 4 + _MK  # a v2 add: packet header, master key, entry


# ---------------------------------------------------------------- v2 header


def v2_header(version: int, opcode: int, flags: int) -> int:
    """BookKeeper's ``PacketHeader.toInt`` (a version-0 header is just the opcode)."""
    if version == 0:
        return opcode
    header = ((version & 0xFF) << 24) | ((opcode & 0xFF) << 16) | (flags & 0xFFFF)
    return header - (1 << 32) if header & 0x80000000 else header  # as a signed int32


def split_v2_header(header: int) -> tuple[int, int, int]:
    """(version byte, opcode, flags) of a v2 packet header."""
    version = (header >> 24) & 0xFF
    if version == 0:
        return 0, header & 0xFF, 0
    return version, (header >> 16) & 0xFF, header & 0xFFFF


# ---------------------------------------------------------------- server: decode requests


def decode_request(frame: bytes | memoryview) -> m.Request:
    """Decode one request frame (without its length prefix). Raises ``MalformedFrame`` only."""
    try:
        if len(frame) == 0:
            raise MalformedFrame("empty frame")
        if frame[0] > 2:
            request = _try_v3_request(frame)
            if request is not None:
                return request
        return _decode_v2_request(frame)
    except MalformedFrame:
        raise
    except Exception as exc:  # a defect in a branch below must still close only this connection
        raise MalformedFrame(f"undecodable frame: {exc!r}") from exc


def _try_v3_request(frame: bytes | memoryview) -> m.Request | None:
    add = _native.decode_add(frame)
    if add is not None:
        return _v3_add(frame, *add)
    msg = pb.Request()
    try:
        msg.ParseFromString(frame)
    except Exception:
        return None
    if not msg.IsInitialized():
        return None
    return _from_v3_request(msg)


def _from_v3_request(msg: Any) -> m.Request:
    h = msg.header
    wire = m.Wire(3, h.txnId, h.version, h.priority > 0)
    op = h.operation
    field, build = _V3_REQUEST_FIELDS.get(op, (None, None))
    if field is None or build is None:
        return m.UnsupportedRequest(wire, op, f"operation {_op_name(op)} is not served")
    if not msg.HasField(field):
        return m.UnsupportedRequest(wire, op, f"{_op_name(op)} without {field}")
    return build(wire, getattr(msg, field))


def _op_name(op: int) -> str:
    try:
        return Op(op).name
    except ValueError:
        return str(op)


def _v3_add(frame: bytes | memoryview, txn_id: int, version: int, priority: int, ledger_id: int, entry_id: int,
            master_key: bytes, body_start: int, body_end: int, recovery: bool, write_flags: int) -> m.Request:
    wire = m.Wire(3, txn_id, version, priority > 0)
    if body_end - body_start < ENTRY_HEADER_SIZE:
        return m.UnsupportedRequest(wire, Op.ADD_ENTRY, "entry shorter than its 32-byte header")
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    return m.AddRequest(wire, ledger_id, entry_id, master_key, view[body_start:body_end],
                        recovery=recovery, write_flags=write_flags)


def _add_beside_another_body(wire: m.Wire, r: Any) -> m.Request:
    # ``_native.decode_add`` takes every well-formed add; what reaches protobuf's decoder with ADD_ENTRY in its
    # header carries another operation's body (or a request context) as well.
    return m.UnsupportedRequest(wire, Op.ADD_ENTRY, "ADD_ENTRY with another operation's request body")


def _v3_read(wire: m.Wire, r: Any) -> m.Request:
    has_flag = r.HasField("flag")
    return m.ReadRequest(
        wire, r.ledgerId, r.entryId,
        fence=has_flag and r.flag == pb.ReadRequest.FENCE_LEDGER,
        master_key=r.masterKey if r.HasField("masterKey") else None,
        previous_lac=r.previousLAC if r.HasField("previousLAC") else None,
        timeout_ms=r.timeOut if r.HasField("timeOut") else None,
        piggyback=has_flag and r.flag == pb.ReadRequest.ENTRY_PIGGYBACK,
    )


_V3_REQUEST_FIELDS: dict[int, tuple[str, Callable[[m.Wire, Any], m.Request]]] = {
    Op.ADD_ENTRY: ("addRequest", _add_beside_another_body),
    Op.READ_ENTRY: ("readRequest", _v3_read),
    Op.READ_LAC: ("readLacRequest", lambda w, r: m.ReadLacRequest(w, r.ledgerId)),
    Op.WRITE_LAC: (
        "writeLacRequest", lambda w, r: m.WriteLacRequest(w, r.ledgerId, r.lac, r.masterKey, r.body)),
    Op.FORCE_LEDGER: ("forceLedgerRequest", lambda w, r: m.ForceLedgerRequest(w, r.ledgerId)),
    Op.GET_BOOKIE_INFO: ("getBookieInfoRequest", lambda w, r: m.GetBookieInfoRequest(w, r.requested)),
    Op.GET_LIST_OF_ENTRIES_OF_LEDGER: (
        "getListOfEntriesOfLedgerRequest", lambda w, r: m.GetListOfEntriesOfLedgerRequest(w, r.ledgerId)),
    Op.AUTH: ("authRequest", lambda w, r: m.AuthRequest(w, r.authPluginName, r.payload)),
    Op.START_TLS: ("startTLSRequest", lambda w, r: m.StartTLSRequest(w)),
}


def _decode_v2_request(frame: bytes | memoryview) -> m.Request:
    add = _native.decode_v2_add(frame)
    if add is not None:
        version, flags, ledger_id, entry_id, master_key = add
        view = frame if isinstance(frame, memoryview) else memoryview(frame)
        return m.AddRequest(_V2_WIRES[version, bool(flags & _FLAG_HIGH)], ledger_id, entry_id, master_key,
                            view[_V2_ENTRY_AT:], recovery=bool(flags & _FLAG_RECOVERY))
    n = len(frame)
    if n < 4:
        raise MalformedFrame(f"v2 frame of {n} bytes has no packet header")
    version, opcode, flags = split_v2_header(_INT.unpack_from(frame, 0)[0])
    wire = _V2_WIRES[version, bool(flags & _FLAG_HIGH)]
    # BookKeeper reads the version as a signed byte: versions >= 128 never carry a fencing master key.
    key_allowed = 2 <= version < 128
    if opcode == _OP_ADD:  # every add of full length was decoded above
        raise MalformedFrame(f"v2 add of {n} bytes: shorter than master key + entry header")
    if opcode == _OP_READ:
        return _v2_read(frame, wire, flags, key_allowed)
    if opcode == _OP_BATCH_READ:
        return _v2_batch_read(frame, wire, flags, key_allowed)
    if opcode == _OP_AUTH:
        return _v2_auth(frame, wire)
    raise MalformedFrame(f"v2 opcode {opcode} is not served (version byte {version})")


def _v2_read(frame: bytes | memoryview, wire: m.Wire, flags: int, key_allowed: bool) -> m.ReadRequest:
    fence = bool(flags & _FLAG_FENCE)
    expected = _READ_REQ.size + (_MK if fence and key_allowed else 0)
    if len(frame) < expected:
        raise MalformedFrame(f"v2 read of {len(frame)} bytes, expected {expected}")
    _, ledger_id, entry_id = _READ_REQ.unpack_from(frame, 0)
    key = bytes(frame[_READ_REQ.size:expected]) if expected > _READ_REQ.size else None
    return m.ReadRequest(wire, ledger_id, entry_id, fence=fence, master_key=key)


def _v2_batch_read(frame: bytes | memoryview, wire: m.Wire, flags: int,
                   key_allowed: bool) -> m.BatchReadRequest:
    fence = bool(flags & _FLAG_FENCE)
    expected = _BATCH_REQ.size + (_MK if fence and key_allowed else 0)
    if len(frame) < expected:
        raise MalformedFrame(f"v2 batch read of {len(frame)} bytes, expected {expected}")
    _, ledger_id, start, request_id, max_count, max_size = _BATCH_REQ.unpack_from(frame, 0)
    key = bytes(frame[_BATCH_REQ.size:expected]) if expected > _BATCH_REQ.size else None
    return m.BatchReadRequest(wire, ledger_id, start, request_id, max_count, max_size,
                              fence=fence, master_key=key)


def _v2_auth(frame: bytes | memoryview, wire: m.Wire) -> m.AuthRequest:
    auth = _parse_auth(frame[4:])
    return m.AuthRequest(wire, auth.authPluginName, auth.payload)


def _parse_auth(data: bytes | memoryview) -> Any:
    auth = pb.AuthMessage()
    try:
        auth.ParseFromString(data)
    except Exception as exc:
        raise MalformedFrame(f"bad AuthMessage: {exc}") from exc
    if not auth.IsInitialized():
        raise MalformedFrame("AuthMessage without plugin name or payload")
    return auth


# ---------------------------------------------------------------- server: encode responses


def encode_response(request: m.Request, response: m.Response) -> bytes:
    """The complete frame (with length prefix) answering ``request`` in the protocol it came in."""
    if request.wire.version == 2:
        return _encode_v2_response(request, response)
    return _frame(_v3_response(request, response))


def encode_refusal(request: m.Request, status: StatusCode) -> bytes:
    """What BookKeeper's ``AuthHandler`` answers a request it refuses before the connection is authenticated:
    a v3 ``Response`` of the echoed header and ``status`` only; a v2 add or read's usual response with that
    status as its rc."""
    if request.wire.version == 3:
        return _frame(_v3_response(request, m.ErrorResponse(request.wire, status, _operation(request))))
    return _encode_v2_response(request, m.error_response(request, status))


def encode_add_ok(request: m.AddRequest) -> bytes:
    """``encode_response(request, AddResponse(EOK))`` as the request hot path writes it, in C (``_native``):
    the same bytes, built directly."""
    w = request.wire
    return _native.encode_add_ok(w.version, w.protocol_version, w.txn_id, request.ledger_id, request.entry_id)


def _encode_v2_response(request: m.Request, response: m.Response) -> bytes:
    version = request.wire.protocol_version
    rc = c.status_to_v2(response.status)
    match request:
        case m.AddRequest():
            ledger_id, entry_id = _ids(response, request.ledger_id, request.entry_id)
            return _RESP.pack(V2_RESPONSE_SIZE, v2_header(version, _OP_ADD, 0), rc, ledger_id, entry_id)
        case m.ReadRequest():
            return _v2_read_response(version, rc, request, response)
        case m.BatchReadRequest():
            return _v2_batch_response(version, rc, request, response)
        case m.AuthRequest():
            return _v2_auth_response(response)
    raise ValueError(f"{type(request).__name__} has no v2 encoding")


def _ids(response: m.Response, ledger_id: int, entry_id: int) -> tuple[int, int]:
    return getattr(response, "ledger_id", ledger_id), getattr(response, "entry_id", entry_id)


def _v2_read_response(version: int, rc: int, request: m.ReadRequest, response: m.Response) -> bytes:
    ledger_id, entry_id = _ids(response, request.ledger_id, request.entry_id)
    body = response.body if isinstance(response, m.ReadResponse) and rc == 0 else None
    header = v2_header(version, _OP_READ, 0)
    if body is None:
        return _RESP.pack(V2_RESPONSE_SIZE, header, rc, ledger_id, entry_id)
    return _RESP.pack(V2_RESPONSE_SIZE + len(body), header, rc, ledger_id, entry_id) + body


def _v2_batch_response(version: int, rc: int, request: m.BatchReadRequest, response: m.Response) -> bytes:
    entries = response.entries if isinstance(response, m.BatchReadResponse) and rc == 0 else ()
    ledger_id = getattr(response, "ledger_id", request.ledger_id)
    start = getattr(response, "start_entry_id", request.start_entry_id)
    request_id = getattr(response, "request_id", request.request_id)
    size = _BATCH_RESP.size - 4 + sum(4 + len(e) for e in entries)
    parts: list[bytes | memoryview] = [
        _BATCH_RESP.pack(size, v2_header(version, V2.BATCH_READ_ENTRY, 0), rc, ledger_id, start, request_id)]
    for entry in entries:
        parts.append(_INT.pack(len(entry)))
        parts.append(entry)
    return b"".join(parts)


def _v2_auth_response(response: m.Response) -> bytes:
    auth = pb.AuthMessage(authPluginName=getattr(response, "plugin_name", ""),
                          payload=bytes(getattr(response, "payload", b"")))
    # BookKeeper answers v2 AUTH with CURRENT_PROTOCOL_VERSION whatever the request said.
    payload = _INT.pack(v2_header(c.V2_CURRENT_PROTOCOL_VERSION, V2.AUTH, 0)) + auth.SerializeToString()
    return _INT.pack(len(payload)) + payload


def _frame(msg: Message) -> bytes:
    payload = msg.SerializeToString()
    return _INT.pack(len(payload)) + payload


_REQUEST_OPS: dict[type, Op] = {
    m.AddRequest: Op.ADD_ENTRY,
    m.ReadRequest: Op.READ_ENTRY,
    m.BatchReadRequest: Op.BATCH_READ_ENTRY,
    m.ReadLacRequest: Op.READ_LAC,
    m.WriteLacRequest: Op.WRITE_LAC,
    m.ForceLedgerRequest: Op.FORCE_LEDGER,
    m.GetBookieInfoRequest: Op.GET_BOOKIE_INFO,
    m.GetListOfEntriesOfLedgerRequest: Op.GET_LIST_OF_ENTRIES_OF_LEDGER,
    m.AuthRequest: Op.AUTH,
    m.StartTLSRequest: Op.START_TLS,
}


def _operation(request: m.Request) -> int:
    if isinstance(request, m.UnsupportedRequest):
        return request.operation
    return _REQUEST_OPS[type(request)]


_V3_OPERATIONS = frozenset(pb.OperationType.values())


def _v3_response(request: m.Request, response: m.Response) -> Message:
    out = pb.Response(status=int(response.status))
    out.header.version = pb.VERSION_THREE
    op = _operation(request)
    if op in _V3_OPERATIONS:
        out.header.operation = op
    else:
        out.header.operation = pb.READ_ENTRY  # unknown op: the status (EBADREQ) is what matters
    out.header.txnId = request.wire.txn_id
    _fill_v3_response(out, response)
    return out


def _opt_bytes(value: bytes | memoryview | None) -> bytes | None:
    return None if value is None else bytes(value)


def _fill_v3_response(out: Any, r: m.Response) -> None:
    status = int(r.status)
    match r:
        case m.AddResponse():
            out.addResponse.CopyFrom(pb.AddResponse(status=status, ledgerId=r.ledger_id, entryId=r.entry_id))
        case m.ReadResponse():
            out.readResponse.CopyFrom(pb.ReadResponse(
                status=status, ledgerId=r.ledger_id, entryId=r.entry_id, body=_opt_bytes(r.body),
                maxLAC=r.max_lac, lacUpdateTimestamp=r.lac_update_timestamp))
        case m.ReadLacResponse():
            out.readLacResponse.CopyFrom(pb.ReadLacResponse(
                status=status, ledgerId=r.ledger_id, lacBody=_opt_bytes(r.lac_body),
                lastEntryBody=_opt_bytes(r.last_entry_body)))
        case m.WriteLacResponse():
            out.writeLacResponse.CopyFrom(pb.WriteLacResponse(status=status, ledgerId=r.ledger_id))
        case m.ForceLedgerResponse():
            out.forceLedgerResponse.CopyFrom(pb.ForceLedgerResponse(status=status, ledgerId=r.ledger_id))
        case m.GetBookieInfoResponse():
            out.getBookieInfoResponse.CopyFrom(pb.GetBookieInfoResponse(
                status=status, totalDiskCapacity=r.total_disk_capacity, freeDiskSpace=r.free_disk_space))
        case m.GetListOfEntriesOfLedgerResponse():
            out.getListOfEntriesOfLedgerResponse.CopyFrom(pb.GetListOfEntriesOfLedgerResponse(
                status=status, ledgerId=r.ledger_id, availabilityOfEntriesOfLedger=r.availability))
        case m.AuthResponse():
            out.authResponse.CopyFrom(pb.AuthMessage(authPluginName=r.plugin_name, payload=bytes(r.payload)))
        case m.StartTLSResponse():
            out.startTLSResponse.SetInParent()
        case m.BatchReadResponse() | m.ErrorResponse():
            pass  # status only (batch read is not served over v3)
