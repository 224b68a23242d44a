"""v3 protobuf frames: round trips, header echo, unsupported operations, per-frame detection."""

from __future__ import annotations

import struct
from typing import Any

import bookie.protocol.client_codec as client_codec
import bookie.protocol.codec as codec
import bookie.protocol.messages as m
import bookie.protocol.proto.BookkeeperProtocol_pb2 as _pb
import pytest
from bookie.protocol.codes import OperationType, StatusCode

pb: Any = _pb

KEY = b"k" * 20
ENTRY = struct.pack(">qqqq", 5, 7, 6, 100) + b"\x00" * 8 + b"payload"
W = m.Wire.v3(42)

REQUESTS: list[m.Request] = [
    m.AddRequest(W, 5, 7, KEY, ENTRY),
    m.AddRequest(m.Wire.v3(1, high_priority=True), 5, 7, KEY, ENTRY, recovery=True, write_flags=1),
    m.ReadRequest(W, 5, 7),
    m.ReadRequest(m.Wire.v3(2, high_priority=True), 5, -1, fence=True, master_key=KEY),
    m.ReadRequest(W, 5, -1, previous_lac=3, timeout_ms=1000, piggyback=True),
    m.ReadRequest(W, 5, 4, previous_lac=3, timeout_ms=10),
    m.ReadLacRequest(W, 5),
    m.WriteLacRequest(W, 5, 3, KEY, b"b" * 24),
    m.ForceLedgerRequest(W, 5),
    m.GetBookieInfoRequest(W, 3),
    m.GetListOfEntriesOfLedgerRequest(W, 5),
    m.AuthRequest(W, "AuthDisabledPlugin", b""),
    m.StartTLSRequest(W),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_v3_request_round_trip(request_: m.Request) -> None:
    frame = client_codec.encode_request(request_)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert frame[4] == 0x0A  # field 1 (header), length-delimited: how a v3 frame starts
    assert codec.decode_request(frame[4:]) == request_


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_v3_response_echoes_operation_and_txn_id(request_: m.Request) -> None:
    out = codec.encode_response(request_, m.error_response(request_, StatusCode.EIO))
    msg = pb.Response.FromString(out[4:])
    assert msg.header.version == pb.VERSION_THREE
    assert msg.header.txnId == request_.wire.txn_id
    assert msg.header.operation == codec._operation(request_)
    assert msg.status == StatusCode.EIO
    assert client_codec.decode_response(out[4:]).status is StatusCode.EIO


def test_v3_read_response_fields() -> None:
    request = m.ReadRequest(W, 5, -1, previous_lac=3, timeout_ms=100, piggyback=True)
    response = m.ReadResponse(W, StatusCode.EOK, 5, 4, body=memoryview(ENTRY), max_lac=9,
                              lac_update_timestamp=123)
    back = client_codec.decode_response(codec.encode_response(request, response)[4:])
    assert back == m.ReadResponse(W, StatusCode.EOK, 5, 4, body=ENTRY, max_lac=9, lac_update_timestamp=123)
    msg = pb.Response.FromString(codec.encode_response(request, response)[4:])
    assert msg.readResponse.status == StatusCode.EOK and msg.status == StatusCode.EOK


def test_v3_other_responses_round_trip() -> None:
    cases: list[tuple[m.Request, m.Response]] = [
        (m.ReadLacRequest(W, 5),
         m.ReadLacResponse(W, StatusCode.EOK, 5, lac_body=b"l" * 24, last_entry_body=ENTRY)),
        (m.GetBookieInfoRequest(W, 3), m.GetBookieInfoResponse(W, StatusCode.EOK, 1000, 400)),
        (m.GetListOfEntriesOfLedgerRequest(W, 5),
         m.GetListOfEntriesOfLedgerResponse(W, StatusCode.EOK, 5, availability=b"\x00" * 64)),
        (m.WriteLacRequest(W, 5, 1, KEY, b"x"), m.WriteLacResponse(W, StatusCode.EREADONLY, 5)),
        (m.ForceLedgerRequest(W, 5), m.ForceLedgerResponse(W, StatusCode.EOK, 5)),
        (m.AuthRequest(W, "p", b""), m.AuthResponse(W, StatusCode.EOK, "AuthDisabledPlugin", b"")),
        (m.StartTLSRequest(W), m.StartTLSResponse(W, StatusCode.EBADREQ)),
        (m.AddRequest(W, 5, 7, KEY, ENTRY), m.AddResponse(W, StatusCode.EOK, 5, 7)),
    ]
    for request, response in cases:
        assert client_codec.decode_response(codec.encode_response(request, response)[4:]) == response


@pytest.mark.parametrize("op", [OperationType.RANGE_READ_ENTRY, OperationType.RANGE_ADD_ENTRY,
                                OperationType.BATCH_READ_ENTRY])
def test_v3_unserved_operations_answer_ebadreq(op: OperationType) -> None:
    msg = pb.Request()
    msg.header.version, msg.header.operation, msg.header.txnId = pb.VERSION_THREE, int(op), 9
    request = codec.decode_request(msg.SerializeToString())
    assert isinstance(request, m.UnsupportedRequest) and request.operation == op
    frame = codec.encode_response(request, m.error_response(request, StatusCode.EBADREQ))
    out = pb.Response.FromString(frame[4:])
    assert (out.status, out.header.operation, out.header.txnId) == (StatusCode.EBADREQ, op, 9)


def test_v3_operation_without_its_body_is_unsupported() -> None:
    msg = pb.Request()
    msg.header.version, msg.header.operation, msg.header.txnId = pb.VERSION_THREE, pb.ADD_ENTRY, 1
    assert isinstance(codec.decode_request(msg.SerializeToString()), m.UnsupportedRequest)


def test_v3_add_shorter_than_entry_header_is_unsupported() -> None:
    frame = client_codec.encode_request(m.AddRequest(W, 5, 7, KEY, b"short"))
    assert isinstance(codec.decode_request(frame[4:]), m.UnsupportedRequest)


def test_v3_version_field_is_reported_for_the_processor() -> None:
    msg = pb.Request()
    msg.header.version, msg.header.operation, msg.header.txnId = pb.VERSION_TWO, pb.READ_LAC, 1
    msg.readLacRequest.ledgerId = 3
    request = codec.decode_request(msg.SerializeToString())
    assert request.wire.version == 3 and request.wire.protocol_version == 2


def test_v3_missing_required_field_is_malformed() -> None:
    msg = pb.Request()
    msg.header.version, msg.header.operation, msg.header.txnId = pb.VERSION_THREE, pb.READ_ENTRY, 1
    msg.readRequest.ledgerId = 1
    raw = msg.SerializePartialToString()  # readRequest.entryId missing
    with pytest.raises(codec.MalformedFrame):
        codec.decode_request(raw)


def test_detection_is_per_frame() -> None:
    v2 = client_codec.encode_request(m.ReadRequest(m.Wire.v2(), 1, 2))[4:]
    v3 = client_codec.encode_request(m.ReadRequest(W, 1, 2))[4:]
    versions = [codec.decode_request(f).wire.version for f in (v3, v2, v3, v2, v2, v3)]
    assert versions == [3, 2, 3, 2, 2, 3]


def test_decode_accepts_memoryview_frames() -> None:
    frame = client_codec.encode_request(m.AddRequest(W, 5, 7, KEY, ENTRY))
    assert codec.decode_request(memoryview(frame)[4:]) == m.AddRequest(W, 5, 7, KEY, ENTRY)


def test_v2_only_requests_refuse_v3_and_v3_only_refuse_v2() -> None:
    with pytest.raises(ValueError):
        client_codec.encode_request(m.ReadLacRequest(m.Wire.v2(), 1))
    with pytest.raises(ValueError):
        client_codec.encode_request(m.BatchReadRequest(W, 1, 0, 1, 1, 1))
