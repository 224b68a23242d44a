"""The client side of the codec: ``encode_request(request)`` (a complete frame with its length prefix) and
``decode_response(frame)`` (payload without the length), for both protocol versions. The frame layouts and
the bookie's side are ``codec``.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from bookie.protocol import _native
from bookie.protocol import codes as c
from bookie.protocol import messages as m
from bookie.protocol.codec import (
    _BATCH_REQ,
    _BATCH_RESP_BODY,
    _FLAG_FENCE,
    _FLAG_HIGH,
    _FLAG_RECOVERY,
    _INT,
    _MK,
    _OP_ADD,
    _OP_AUTH,
    _OP_BATCH_READ,
    _OP_READ,
    _READ_REQ,
    _RESP_BODY,
    _V2_WIRES,
    V2_RESPONSE_SIZE,
    MalformedFrame,
    _frame,
    _operation,
    _parse_auth,
    pb,
    split_v2_header,
    v2_header,
)
from bookie.protocol.codes import StatusCode
from bookie.protocol.codes import V2OpCode as V2

# ---------------------------------------------------------------- client: encode requests


def encode_request(request: m.Request) -> bytes:
    """The complete frame (with length prefix) of a client request, in ``request.wire.version``."""
    if request.wire.version == 2:
        return _encode_v2_request(request)
    if type(request) is m.AddRequest:  # every append, in C; the rest through protobuf
        wire = request.wire
        return _native.encode_add(wire.txn_id, c.HIGH_PRIORITY_VALUE if wire.high_priority else 0,
                                  request.ledger_id, request.entry_id, request.master_key, request.body,
                                  request.recovery, request.write_flags)
    return _frame(_v3_request(request))


def _v2_flags(wire: m.Wire, *, fence: bool = False, recovery: bool = False) -> int:
    return ((_FLAG_FENCE if fence else 0) | (_FLAG_RECOVERY if recovery else 0)
            | (_FLAG_HIGH if wire.high_priority else 0))


def _master_key(key: bytes | None) -> bytes:
    if key is None or len(key) != _MK:
        raise ValueError(f"v2 master key must be {_MK} bytes")
    return key


def _encode_v2_request(r: m.Request) -> bytes:
    v = r.wire.protocol_version
    match r:
        case m.AddRequest():
            header = v2_header(v, _OP_ADD, _v2_flags(r.wire, recovery=r.recovery))
            prefix = _INT.pack(4 + _MK + len(r.body)) + _INT.pack(header) + _master_key(r.master_key)
            return prefix + r.body
        case m.ReadRequest():
            header = v2_header(v, _OP_READ, _v2_flags(r.wire, fence=r.fence))
            key = _master_key(r.master_key) if r.fence and v >= 2 else b""
            body = _READ_REQ.pack(header, r.ledger_id, r.entry_id)
            return _INT.pack(len(body) + len(key)) + body + key
        case m.BatchReadRequest():
            header = v2_header(v, V2.BATCH_READ_ENTRY, _v2_flags(r.wire, fence=r.fence))
            key = _master_key(r.master_key) if r.fence and v >= 2 else b""
            body = _BATCH_REQ.pack(header, r.ledger_id, r.start_entry_id, r.request_id, r.max_count,
                                   r.max_size)
            return _INT.pack(len(body) + len(key)) + body + key
        case m.AuthRequest():
            auth = pb.AuthMessage(authPluginName=r.plugin_name, payload=r.payload).SerializeToString()
            return _INT.pack(4 + len(auth)) + _INT.pack(v2_header(v, V2.AUTH, 0)) + auth
    raise ValueError(f"{type(r).__name__} is v3 only")


def _v3_request(r: m.Request) -> Message:
    out = pb.Request()
    out.header.version = pb.VERSION_THREE
    out.header.operation = _operation(r)
    out.header.txnId = r.wire.txn_id
    if r.wire.high_priority:
        out.header.priority = c.HIGH_PRIORITY_VALUE
    _fill_v3_request(out, r)
    return out


def _fill_v3_request(out: Any, r: m.Request) -> None:
    match r:
        case m.AddRequest():
            add = out.addRequest
            add.ledgerId, add.entryId = r.ledger_id, r.entry_id
            add.masterKey, add.body = r.master_key, bytes(r.body)
            if r.recovery:
                add.flag = pb.AddRequest.RECOVERY_ADD
            if r.write_flags:
                add.writeFlags = r.write_flags
        case m.ReadRequest():
            _fill_v3_read(out.readRequest, r)
        case m.ReadLacRequest():
            out.readLacRequest.ledgerId = r.ledger_id
        case m.WriteLacRequest():
            w = out.writeLacRequest
            w.ledgerId, w.lac, w.masterKey, w.body = r.ledger_id, r.lac, r.master_key, bytes(r.body)
        case m.ForceLedgerRequest():
            out.forceLedgerRequest.ledgerId = r.ledger_id
        case m.GetBookieInfoRequest():
            out.getBookieInfoRequest.requested = r.requested
        case m.GetListOfEntriesOfLedgerRequest():
            out.getListOfEntriesOfLedgerRequest.ledgerId = r.ledger_id
        case m.AuthRequest():
            out.authRequest.authPluginName, out.authRequest.payload = r.plugin_name, r.payload
        case m.StartTLSRequest():
            out.startTLSRequest.SetInParent()
        case _:
            raise ValueError(f"{type(r).__name__} has no v3 encoding")


def _fill_v3_read(rr: Any, r: m.ReadRequest) -> None:
    rr.ledgerId, rr.entryId = r.ledger_id, r.entry_id
    if r.fence:
        rr.flag = pb.ReadRequest.FENCE_LEDGER
    elif r.piggyback:
        rr.flag = pb.ReadRequest.ENTRY_PIGGYBACK
    if r.master_key is not None:
        rr.masterKey = r.master_key
    if r.previous_lac is not None:
        rr.previousLAC = r.previous_lac
    if r.timeout_ms is not None:
        rr.timeOut = r.timeout_ms


# ---------------------------------------------------------------- client: decode responses


def decode_response(frame: bytes | memoryview, version: int | None = None) -> m.Response:
    """Decode one response frame (without length prefix); ``version`` None = detect as for requests."""
    try:
        if len(frame) == 0:
            raise MalformedFrame("empty frame")
        if version is None:
            version = 2 if frame[0] <= 2 else 3
        return _decode_v2_response(frame) if version == 2 else _decode_v3_response(frame)
    except MalformedFrame:
        raise
    except Exception as exc:
        raise MalformedFrame(f"undecodable response: {exc!r}") from exc


def _decode_v2_response(frame: bytes | memoryview) -> m.Response:
    if len(frame) < 4:
        raise MalformedFrame("v2 response without header")
    version, opcode, _ = split_v2_header(_INT.unpack_from(frame, 0)[0])
    wire = _V2_WIRES[version, False]
    if opcode == _OP_AUTH:
        auth = _parse_auth(frame[4:])
        return m.AuthResponse(wire, StatusCode.EOK, auth.authPluginName, auth.payload)
    if opcode == _OP_BATCH_READ:
        return _decode_v2_batch_response(frame, wire)
    if opcode not in (_OP_ADD, _OP_READ) or len(frame) < V2_RESPONSE_SIZE:
        raise MalformedFrame(f"v2 response opcode {opcode} of {len(frame)} bytes")
    rc, ledger_id, entry_id = _RESP_BODY.unpack_from(frame, 4)
    status = c.v2_to_status(rc)
    if opcode == _OP_ADD:
        return m.AddResponse(wire, status, ledger_id, entry_id)
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    body = view[V2_RESPONSE_SIZE:] if len(frame) > V2_RESPONSE_SIZE else None
    return m.ReadResponse(wire, status, ledger_id, entry_id, body=body)


def _decode_v2_batch_response(frame: bytes | memoryview, wire: m.Wire) -> m.BatchReadResponse:
    if len(frame) < 4 + _BATCH_RESP_BODY.size:
        raise MalformedFrame("short v2 batch read response")
    rc, ledger_id, start, request_id = _BATCH_RESP_BODY.unpack_from(frame, 4)
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    entries: list[memoryview] = []
    pos = 4 + _BATCH_RESP_BODY.size
    while pos < len(frame):
        if pos + 4 > len(frame):
            raise MalformedFrame("truncated entry length in batch read response")
        (size,) = _INT.unpack_from(frame, pos)
        if size < 0 or pos + 4 + size > len(frame):
            raise MalformedFrame("truncated entry in batch read response")
        entries.append(view[pos + 4:pos + 4 + size])
        pos += 4 + size
    return m.BatchReadResponse(wire, c.v2_to_status(rc), ledger_id, start, request_id, tuple(entries))


_STATUS = {int(status): status for status in StatusCode}


def _opt(msg: Any, field: str) -> Any:
    return getattr(msg, field) if msg.HasField(field) else None


def _decode_v3_response(frame: bytes | memoryview) -> m.Response:
    add = _native.decode_add_response(frame)  # the answer to every append, in C; the rest through protobuf
    if add is not None:
        txn_id, version, priority, _, add_status, ledger_id, entry_id = add
        return m.AddResponse(m.Wire(3, txn_id, version, priority > 0), _STATUS[add_status], ledger_id, entry_id)
    msg = pb.Response()
    try:
        msg.ParseFromString(frame)
    except Exception as exc:
        raise MalformedFrame(f"bad v3 response: {exc}") from exc
    if not msg.IsInitialized():
        raise MalformedFrame(f"v3 response missing {msg.FindInitializationErrors()}")
    h = msg.header
    wire = m.Wire(3, h.txnId, h.version, h.priority > 0)
    status = StatusCode(msg.status)
    return _v3_sub_response(msg, wire, status, h.operation)


def _v3_sub_response(msg: Any, wire: m.Wire, status: StatusCode, op: int) -> m.Response:
    if msg.HasField("addResponse"):
        a = msg.addResponse
        return m.AddResponse(wire, StatusCode(a.status), a.ledgerId, a.entryId)
    if msg.HasField("readResponse"):
        r = msg.readResponse
        return m.ReadResponse(wire, StatusCode(r.status), r.ledgerId, r.entryId, body=_opt(r, "body"),
                              max_lac=_opt(r, "maxLAC"), lac_update_timestamp=_opt(r, "lacUpdateTimestamp"))
    if msg.HasField("readLacResponse"):
        rl = msg.readLacResponse
        return m.ReadLacResponse(wire, StatusCode(rl.status), rl.ledgerId, lac_body=_opt(rl, "lacBody"),
                                 last_entry_body=_opt(rl, "lastEntryBody"))
    if msg.HasField("writeLacResponse"):
        wl = msg.writeLacResponse
        return m.WriteLacResponse(wire, StatusCode(wl.status), wl.ledgerId)
    if msg.HasField("forceLedgerResponse"):
        f = msg.forceLedgerResponse
        return m.ForceLedgerResponse(wire, StatusCode(f.status), f.ledgerId)
    if msg.HasField("getBookieInfoResponse"):
        b = msg.getBookieInfoResponse
        return m.GetBookieInfoResponse(wire, StatusCode(b.status),
                                       total_disk_capacity=_opt(b, "totalDiskCapacity"),
                                       free_disk_space=_opt(b, "freeDiskSpace"))
    if msg.HasField("getListOfEntriesOfLedgerResponse"):
        g = msg.getListOfEntriesOfLedgerResponse
        return m.GetListOfEntriesOfLedgerResponse(wire, StatusCode(g.status), g.ledgerId,
                                                  availability=_opt(g, "availabilityOfEntriesOfLedger"))
    if msg.HasField("authResponse"):
        return m.AuthResponse(wire, status, msg.authResponse.authPluginName, msg.authResponse.payload)
    if msg.HasField("startTLSResponse"):
        return m.StartTLSResponse(wire, status)
    return m.ErrorResponse(wire, status, op)
