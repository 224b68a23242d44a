"""Exact v2 byte layouts (BookieProtocol / BookieProtoEncoding) for requests and responses."""

from __future__ import annotations

import struct

import bookie.protocol.client_codec as client_codec
import bookie.protocol.codec as codec
import bookie.protocol.messages as m
import pytest
from bookie.protocol.codes import StatusCode

KEY = bytes(range(20))
ENTRY = struct.pack(">qqqq", 7, 3, 2, 100) + b"D" * 4 + b"payload"


def test_v2_add_request_layout_and_decode() -> None:
    frame = client_codec.encode_request(m.AddRequest(m.Wire.v2(high_priority=True), 7, 3, KEY, ENTRY, recovery=True))
    # frameLen = 4 (header) + 20 (master key) + entry
    assert frame[:4] == struct.pack(">i", 4 + 20 + len(ENTRY))
    assert frame[4:8] == bytes([2, 1, 0x00, 0x06])  # version 2, ADDENTRY, RECOVERY_ADD|HIGH_PRIORITY
    assert frame[8:28] == KEY
    assert frame[28:] == ENTRY
    request = codec.decode_request(frame[4:])
    assert isinstance(request, m.AddRequest)
    assert (request.ledger_id, request.entry_id, request.master_key) == (7, 3, KEY)
    assert request.recovery and request.wire.high_priority and request.wire.version == 2
    assert isinstance(request.body, memoryview) and bytes(request.body) == ENTRY


def test_v2_add_response_is_24_bytes() -> None:
    request = codec.decode_request(client_codec.encode_request(m.AddRequest(m.Wire.v2(), 7, 3, KEY, ENTRY))[4:])
    frame = codec.encode_response(request, m.AddResponse(request.wire, StatusCode.EFENCED, 7, 3))
    assert frame == struct.pack(">iiiqq", 24, 0x02010000, 104, 7, 3)


def test_v2_read_request_plain_and_fencing() -> None:
    plain = client_codec.encode_request(m.ReadRequest(m.Wire.v2(), 9, -1))
    assert plain == struct.pack(">iiqq", 20, 0x02020000, 9, -1)
    fencing = client_codec.encode_request(m.ReadRequest(m.Wire.v2(high_priority=True), 9, -1, fence=True,
                                                 master_key=KEY))
    assert fencing == struct.pack(">iiqq", 40, 0x02020005, 9, -1) + KEY
    decoded = codec.decode_request(fencing[4:])
    assert decoded == m.ReadRequest(m.Wire.v2(high_priority=True), 9, -1, fence=True, master_key=KEY)


def test_v2_read_responses_ok_and_error() -> None:
    request = codec.decode_request(client_codec.encode_request(m.ReadRequest(m.Wire.v2(), 7, 3))[4:])
    ok = codec.encode_response(request, m.ReadResponse(request.wire, StatusCode.EOK, 7, 3, body=ENTRY))
    assert ok == struct.pack(">iiiqq", 24 + len(ENTRY), 0x02020000, 0, 7, 3) + ENTRY
    err = codec.encode_response(request, m.ReadResponse(request.wire, StatusCode.ENOENTRY, 7, 3, body=ENTRY))
    assert err == struct.pack(">iiiqq", 24, 0x02020000, 2, 7, 3)  # error responses never carry a body


def test_v2_batch_read_request_and_response() -> None:
    frame = client_codec.encode_request(m.BatchReadRequest(m.Wire.v2(), 5, 10, 77, 3, 4096))
    assert frame == struct.pack(">iiqqqiq", 40, 0x02070000, 5, 10, 77, 3, 4096)
    request = codec.decode_request(frame[4:])
    assert request == m.BatchReadRequest(m.Wire.v2(), 5, 10, 77, 3, 4096)
    response = m.BatchReadResponse(request.wire, StatusCode.EOK, 5, 10, 77, entries=(b"abc", b"de"))
    out = codec.encode_response(request, response)
    body = struct.pack(">i", 3) + b"abc" + struct.pack(">i", 2) + b"de"
    assert out == struct.pack(">iiiqqq", 32 + len(body), 0x02070000, 0, 5, 10, 77) + body
    back = client_codec.decode_response(out[4:])
    assert isinstance(back, m.BatchReadResponse)
    assert [bytes(e) for e in back.entries] == [b"abc", b"de"] and back.request_id == 77


def test_v2_batch_read_fencing_carries_key() -> None:
    frame = client_codec.encode_request(m.BatchReadRequest(m.Wire.v2(), 5, 0, 1, 0, 0, fence=True, master_key=KEY))
    assert len(frame) == 4 + 60 and frame[-20:] == KEY
    request = codec.decode_request(frame[4:])
    assert isinstance(request, m.BatchReadRequest) and request.fence and request.master_key == KEY


def test_v2_auth_round_trip_and_disabled_plugin_answer() -> None:
    frame = client_codec.encode_request(m.AuthRequest(m.Wire.v2(), "SASL", b"\x01\x02"))
    assert frame[4:8] == bytes([2, 3, 0, 0])
    request = codec.decode_request(frame[4:])
    assert request == m.AuthRequest(m.Wire.v2(), "SASL", b"\x01\x02")
    answer = m.AuthResponse(request.wire, StatusCode.EOK, "AuthDisabledPlugin", b"")
    out = codec.encode_response(request, answer)
    back = client_codec.decode_response(out[4:])
    assert back == m.AuthResponse(m.Wire.v2(), StatusCode.EOK, "AuthDisabledPlugin", b"")


def test_legacy_version_zero_header_is_just_the_opcode() -> None:
    frame = struct.pack(">iqq", 2, 4, 5)  # version 0: header int == READENTRY
    request = codec.decode_request(frame)
    assert request == m.ReadRequest(m.Wire(2, 0, 0, False), 4, 5)
    out = codec.encode_response(request, m.ReadResponse(request.wire, StatusCode.ENOLEDGER, 4, 5))
    assert out == struct.pack(">iiiqq", 24, 2, 1, 4, 5)


def test_version_one_fencing_read_has_no_master_key() -> None:
    frame = struct.pack(">iqq", 0x01020001, 4, 5)
    request = codec.decode_request(frame)
    assert isinstance(request, m.ReadRequest) and request.fence and request.master_key is None


def test_v2_version_byte_above_two_is_decoded_for_ebadversion() -> None:
    # BookKeeper decodes it and answers EBADVERSION echoing the version: the processor decides, not the codec.
    request = codec.decode_request(struct.pack(">iqq", 0x07020000, 4, 5))
    assert request.wire.version == 2 and request.wire.protocol_version == 7
    out = codec.encode_response(request, m.error_response(request, StatusCode.EBADVERSION))
    assert out == struct.pack(">iiiqq", 24, 0x07020000, 103, 4, 5)


@pytest.mark.parametrize("opcode", [4, 5, 6, 8, 0x7F])
def test_v2_unserved_opcodes_are_malformed(opcode: int) -> None:
    with pytest.raises(codec.MalformedFrame):
        codec.decode_request(struct.pack(">iq", (2 << 24) | (opcode << 16), 1))


V2_RC = {"EOK": 0, "ENOLEDGER": 1, "ENOENTRY": 2, "EBADREQ": 100, "EIO": 101, "EUA": 102, "EBADVERSION": 103,
         "EFENCED": 104, "EREADONLY": 105, "ETOOMANYREQUESTS": 106, "EUNKNOWNLEDGERSTATE": 107}


@pytest.mark.parametrize("name,rc", V2_RC.items())
def test_every_status_maps_to_its_v2_rc(name: str, rc: int) -> None:
    status = StatusCode[name]
    request = codec.decode_request(client_codec.encode_request(m.AddRequest(m.Wire.v2(), 1, 2, KEY, ENTRY))[4:])
    out = codec.encode_response(request, m.AddResponse(request.wire, status, 1, 2))
    assert struct.unpack_from(">i", out, 8)[0] == rc
    assert client_codec.decode_response(out[4:]).status is status
