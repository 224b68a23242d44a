"""A v3 add frame means to the bookie exactly what it means to protobuf.

``codec.decode_request`` decodes v3 adds in C (``bookie.protocol._native``). protobuf's own parser is the
reference: for well-formed adds, for the wire rules a hand-written decoder can get wrong (field order, merged
repeated messages, unknown fields, mismatched wire types, enum values outside their enum, negative and 64-bit
ids), and for tens of thousands of damaged frames, the add fields agree, and a frame protobuf does not read
as an add alone is never taken for one.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest
from bookie.protocol import _native, client_codec, codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.proto import BookkeeperProtocol_pb2 as _pb

from tests.support.protobuf_wire import damaged, field, varint

pb: Any = _pb
KEY = b"k" * 20
ENTRY = struct.pack(">qqqq", 5, 7, 6, 100) + b"\x00" * 8 + b"payload"
OTHER_BODIES = {"readRequest", "authRequest", "writeLacRequest", "readLacRequest", "getBookieInfoRequest",
                "startTLSRequest", "forceLedgerRequest", "getListOfEntriesOfLedgerRequest", "requestContext"}


def reference(frame: bytes) -> tuple[Any, ...] | None:
    """What protobuf reads: the add's fields when the frame is an initialized Request whose header says
    ADD_ENTRY and which carries an addRequest and no other operation's body; None otherwise."""
    msg = pb.Request()
    try:
        msg.ParseFromString(frame)
    except Exception:
        return None
    if not msg.IsInitialized() or msg.header.operation != pb.ADD_ENTRY or not msg.HasField("addRequest"):
        return None
    if {field.name for field, _ in msg.ListFields()} & OTHER_BODIES:
        return None
    h, a = msg.header, msg.addRequest
    recovery = a.HasField("flag") and a.flag == pb.AddRequest.RECOVERY_ADD
    return (h.txnId, h.version, h.priority, a.ledgerId, a.entryId, a.masterKey, a.body, recovery, a.writeFlags)


def decoded(frame: bytes) -> tuple[Any, ...] | None:
    fields = _native.decode_add(frame)
    if fields is None:
        return None
    txn_id, version, priority, ledger_id, entry_id, key, start, end, recovery, write_flags = fields
    return (txn_id, version, priority, ledger_id, entry_id, key, frame[start:end], recovery, write_flags)


def add_frame(rng: random.Random) -> bytes:
    request = pb.Request()
    request.header.version = pb.VERSION_THREE
    request.header.operation = pb.ADD_ENTRY
    request.header.txnId = rng.choice([0, 1, 127, 128, 2**32, 2**64 - 1, rng.randrange(2**64)])
    if rng.random() < 0.3:
        request.header.priority = rng.choice([0, 1, 2**32 - 1])
    add = request.addRequest
    add.ledgerId = rng.choice([0, 1, 2**63 - 1, -1, -2**63, rng.randrange(-2**63, 2**63)])
    add.entryId = rng.choice([0, 1, -1, rng.randrange(2**40)])
    add.masterKey = rng.randbytes(rng.choice([0, 20, 33]))
    add.body = rng.randbytes(rng.choice([0, 31, 32, 200, 70_000]))
    if rng.random() < 0.3:
        add.flag = pb.AddRequest.RECOVERY_ADD
    if rng.random() < 0.3:
        add.writeFlags = rng.choice([0, 1, -1, 2**31 - 1])
    return bytes(request.SerializeToString())


HEADER = field(1, 0, 3) + field(2, 0, 2) + field(3, 0, 77)
ADD = field(1, 0, 5) + field(2, 0, 7) + field(3, 2, KEY) + field(4, 2, ENTRY)

HAND_BUILT = {
    "fields in declaration order": field(1, 2, HEADER) + field(101, 2, ADD),
    "addRequest before header": field(101, 2, ADD) + field(1, 2, HEADER),
    "fields reversed inside each message": field(1, 2, field(3, 0, 77) + field(2, 0, 2) + field(1, 0, 3))
    + field(101, 2, field(4, 2, ENTRY) + field(3, 2, KEY) + field(2, 0, 7) + field(1, 0, 5)),
    "header split in two occurrences (merged)": field(1, 2, field(1, 0, 3) + field(3, 0, 1))
    + field(101, 2, ADD) + field(1, 2, field(2, 0, 2) + field(3, 0, 99)),
    "addRequest split in two occurrences (merged)": field(1, 2, HEADER) + field(101, 2, field(1, 0, 5))
    + field(101, 2, field(2, 0, 7) + field(3, 2, KEY) + field(4, 2, ENTRY)),
    "repeated scalar: the last one wins": field(1, 2, HEADER) + field(101, 2, ADD + field(1, 0, 6)),
    "unknown fields of every wire type": field(1, 2, HEADER + field(9, 1, b"\0" * 8)) + field(50, 0, 1)
    + field(101, 2, ADD + field(77, 5, b"\0" * 4) + field(78, 2, b"xyz")) + field(300, 1, b"\1" * 8),
    "ledgerId with the wrong wire type is unknown, the add lacks it": field(1, 2, HEADER)
    + field(101, 2, field(1, 2, b"\5") + field(2, 0, 7) + field(3, 2, KEY) + field(4, 2, ENTRY)),
    "operation outside its enum": field(1, 2, field(1, 0, 3) + field(2, 0, 99) + field(3, 0, 1))
    + field(101, 2, ADD),
    "version outside its enum": field(1, 2, field(1, 0, 7) + field(2, 0, 2) + field(3, 0, 1))
    + field(101, 2, ADD),
    "flag outside its enum after RECOVERY_ADD keeps RECOVERY_ADD": field(1, 2, HEADER)
    + field(101, 2, ADD + field(100, 0, 1) + field(100, 0, 5)),
    "negative writeFlags": field(1, 2, HEADER) + field(101, 2, ADD + field(5, 0, -2)),
    "priority above 32 bits is truncated": field(1, 2, HEADER + field(4, 0, 2**32 + 3)) + field(101, 2, ADD),
    "a read's body beside the add": field(1, 2, HEADER) + field(101, 2, ADD)
    + field(100, 2, field(1, 0, 5) + field(2, 0, 7)),
    "a request context beside the add": field(1, 2, HEADER) + field(101, 2, ADD)
    + field(200, 2, field(1, 2, b"k") + field(2, 2, b"v")),
    "readRequest's number with a varint is unknown": field(1, 2, HEADER) + field(101, 2, ADD) + field(100, 0, 1),
    "no addRequest": field(1, 2, HEADER),
    "no header": field(101, 2, ADD),
    "no body": field(1, 2, HEADER) + field(101, 2, field(1, 0, 5) + field(2, 0, 7) + field(3, 2, KEY)),
    "a read request": field(1, 2, field(1, 0, 3) + field(2, 0, 1) + field(3, 0, 1))
    + field(100, 2, field(1, 0, 5) + field(2, 0, 7)),
    "a group (deprecated wire type)": field(1, 2, HEADER) + field(101, 2, ADD) + varint(60 << 3 | 3)
    + varint(60 << 3 | 4),
    "nested groups holding fields": field(1, 2, HEADER) + field(101, 2, ADD) + varint(60 << 3 | 3)
    + field(1, 0, 9) + varint(61 << 3 | 3) + field(2, 2, b"x") + varint(61 << 3 | 4) + varint(60 << 3 | 4),
    "a group closed by another group's end": field(1, 2, HEADER) + field(101, 2, ADD) + varint(60 << 3 | 3)
    + varint(61 << 3 | 4),
    "field number 0": field(1, 2, HEADER) + field(101, 2, ADD) + b"\x00\x00",
    "varint of 11 bytes": field(1, 2, HEADER) + field(101, 2, ADD) + varint(50 << 3) + b"\xff" * 10 + b"\x01",
    "length beyond the frame": field(1, 2, HEADER) + varint(101 << 3 | 2) + varint(len(ADD) + 1) + ADD,
}


@pytest.mark.parametrize("name", HAND_BUILT)
def test_the_wire_rules_are_protobufs(name: str) -> None:
    frame = HAND_BUILT[name]
    assert decoded(frame) == reference(frame)


def test_well_formed_adds_decode_to_their_fields() -> None:
    rng = random.Random(1)
    for _ in range(3000):
        frame = add_frame(rng)
        expected = reference(frame)
        assert expected is not None
        assert decoded(frame) == expected


def test_damaged_frames_are_never_misread() -> None:
    rng = random.Random(2)
    seeds = [add_frame(rng) for _ in range(40)] + list(HAND_BUILT.values())
    adds_seen = 0
    for data in damaged(rng, seeds, 60_000):
        expected = reference(data)
        adds_seen += expected is not None
        assert decoded(data) == expected, data.hex()
    assert adds_seen > 1000  # the mutations leave many frames that are still adds


def test_a_decoded_add_is_served_as_the_request_the_client_sent() -> None:
    sent = m.AddRequest(m.Wire.v3(9, high_priority=True), 5, 7, KEY, ENTRY, recovery=True, write_flags=1)
    received = codec.decode_request(client_codec.encode_request(sent)[4:])
    assert isinstance(received, m.AddRequest)
    assert received.wire == sent.wire
    assert (received.ledger_id, received.entry_id, received.master_key, bytes(received.body)) == (5, 7, KEY, ENTRY)
    assert received.recovery and received.deferred_sync


def test_an_add_beside_another_operations_body_is_refused_by_name() -> None:
    received = codec.decode_request(HAND_BUILT["a read's body beside the add"])
    assert isinstance(received, m.UnsupportedRequest)
    assert "another operation's request body" in received.reason
    answer = codec.encode_response(received, m.error_response(received, StatusCode.EBADREQ))
    assert client_codec.decode_response(answer[4:], 3).status == StatusCode.EBADREQ


def test_an_entry_shorter_than_its_header_is_refused() -> None:
    frame = field(1, 2, HEADER) + field(101, 2, field(1, 0, 5) + field(2, 0, 7) + field(3, 2, KEY)
                                        + field(4, 2, b"x" * 31))
    received = codec.decode_request(frame)
    assert isinstance(received, m.UnsupportedRequest)
    assert "shorter than its 32-byte header" in received.reason
