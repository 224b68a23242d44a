"""decode_request on hostile input: it returns a request or raises MalformedFrame - nothing else, quickly."""

from __future__ import annotations

import struct

import bookie.protocol.client_codec as client_codec
import bookie.protocol.codec as codec
import bookie.protocol.messages as m
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

KEY = b"k" * 20
ENTRY = struct.pack(">qqqq", 5, 7, 6, 100) + b"\x00" * 8 + b"payload"
VALID_FRAMES = [client_codec.encode_request(r)[4:] for r in (
    m.AddRequest(m.Wire.v2(), 5, 7, KEY, ENTRY),
    m.ReadRequest(m.Wire.v2(), 5, 7, fence=True, master_key=KEY),
    m.BatchReadRequest(m.Wire.v2(), 5, 0, 1, 10, 1000),
    m.AuthRequest(m.Wire.v2(), "p", b"x"),
    m.AddRequest(m.Wire.v3(1), 5, 7, KEY, ENTRY, recovery=True),
    m.ReadRequest(m.Wire.v3(2), 5, -1, previous_lac=1, timeout_ms=5, piggyback=True),
    m.WriteLacRequest(m.Wire.v3(3), 5, 1, KEY, b"x" * 24),
    m.GetBookieInfoRequest(m.Wire.v3(4), 3),
)]
FUZZ = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _decode_or_malformed(frame: bytes) -> None:
    try:
        request = codec.decode_request(frame)
    except codec.MalformedFrame as exc:
        assert str(exc)  # always says why
        return
    assert request.wire.version in (2, 3)
    # Whatever decoded must be answerable.
    codec.encode_response(request, m.error_response(request, m.StatusCode.EBADREQ))


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(frame: bytes) -> None:
    _decode_or_malformed(frame)


@FUZZ
@given(st.sampled_from(VALID_FRAMES), st.data())
def test_mutated_valid_frames(frame: bytes, data: st.DataObject) -> None:
    buf = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 6))):
        action = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        pos = data.draw(st.integers(0, max(len(buf) - 1, 0)))
        if action == "flip" and buf:
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif action == "truncate":
            del buf[pos:]
        elif action == "insert":
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
        elif buf:
            del buf[pos]
    _decode_or_malformed(bytes(buf))


@FUZZ
@given(st.sampled_from([0, 1, 2, 3, 0x0A, 0x7F, 0x80, 0xFF]), st.integers(0, 255), st.integers(0, 0xFFFF),
       st.binary(max_size=80))
def test_v2_headers_with_any_opcode_and_flags(version: int, opcode: int, flags: int, rest: bytes) -> None:
    _decode_or_malformed(bytes([version, opcode]) + struct.pack(">H", flags) + rest)


@FUZZ
@given(st.binary(max_size=200), st.sampled_from([None, 2, 3]))
def test_decode_response_random_bytes(frame: bytes, version: int | None) -> None:
    try:
        client_codec.decode_response(frame, version)
    except codec.MalformedFrame:
        pass
