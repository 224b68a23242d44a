"""A v3 add response means to our client exactly what it means to protobuf.

``client_codec.decode_response`` decodes the answer to an append in C (``_native.decode_add_response``) and
every other response with protobuf's classes. protobuf's parser is the reference: for well-formed answers of
every status, for the wire rules (field order, merged repeated messages, unknown fields, mismatched wire types,
statuses outside their enum), and for tens of thousands of damaged frames, the fields agree, and a frame
protobuf does not read as an add response alone is never taken for one.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from bookie.protocol import _native, client_codec, codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.proto import BookkeeperProtocol_pb2 as _pb

from tests.support.protobuf_wire import damaged, field, varint

pb: Any = _pb
OTHER_ANSWERS = {"readResponse", "authResponse", "writeLacResponse", "readLacResponse", "getBookieInfoResponse",
                 "startTLSResponse", "forceLedgerResponse", "getListOfEntriesOfLedgerResponse"}


def reference(frame: bytes) -> tuple[int, ...] | None:
    """What protobuf reads: an initialized Response with an addResponse and no other operation's answer."""
    msg = pb.Response()
    try:
        msg.ParseFromString(frame)
    except Exception:
        return None
    if not msg.IsInitialized() or not msg.HasField("addResponse"):
        return None
    if {f.name for f, _ in msg.ListFields()} & OTHER_ANSWERS:
        return None
    h, a = msg.header, msg.addResponse
    return (h.txnId, h.version, h.priority, msg.status, a.status, a.ledgerId, a.entryId)


def answer_frame(rng: random.Random) -> bytes:
    response = pb.Response()
    response.header.version = pb.VERSION_THREE
    response.header.operation = pb.ADD_ENTRY
    response.header.txnId = rng.choice([0, 1, 127, 128, 2**32, 2**64 - 1, rng.randrange(2**64)])
    if rng.random() < 0.3:
        response.header.priority = rng.choice([0, 1, 2**32 - 1])
    response.status = rng.choice(list(StatusCode))
    response.addResponse.status = rng.choice(list(StatusCode))
    response.addResponse.ledgerId = rng.choice([0, 1, 2**63 - 1, -1, -2**63, rng.randrange(-2**63, 2**63)])
    response.addResponse.entryId = rng.choice([0, 1, -1, rng.randrange(2**40)])
    return bytes(response.SerializeToString())


HEADER = field(1, 0, 3) + field(2, 0, 2) + field(3, 0, 77)
ANSWER = field(1, 0, 0) + field(2, 0, 5) + field(3, 0, 7)

HAND_BUILT = {
    "fields in declaration order": field(1, 2, HEADER) + field(2, 0, 0) + field(101, 2, ANSWER),
    "addResponse first": field(101, 2, ANSWER) + field(2, 0, 0) + field(1, 2, HEADER),
    "header split in two occurrences (merged)": field(1, 2, field(1, 0, 3) + field(3, 0, 1)) + field(2, 0, 0)
    + field(101, 2, ANSWER) + field(1, 2, field(2, 0, 2) + field(3, 0, 99)),
    "addResponse split in two occurrences (merged)": field(1, 2, HEADER) + field(2, 0, 0)
    + field(101, 2, field(1, 0, 504)) + field(101, 2, field(2, 0, 5) + field(3, 0, 7)),
    "repeated scalar: the last one wins": field(1, 2, HEADER) + field(2, 0, 0) + field(101, 2, ANSWER + field(3, 0, 8)),
    "unknown fields of every wire type": field(1, 2, HEADER + field(9, 1, b"\0" * 8)) + field(2, 0, 0)
    + field(50, 0, 1) + field(101, 2, ANSWER + field(77, 5, b"\0" * 4)) + field(300, 2, b"xyz"),
    "status outside its enum is unknown, the response lacks it": field(1, 2, HEADER) + field(2, 0, 999)
    + field(101, 2, ANSWER),
    "add status outside its enum after EFENCED keeps EFENCED": field(1, 2, HEADER) + field(2, 0, 0)
    + field(101, 2, ANSWER + field(1, 0, 504) + field(1, 0, 405)),
    "ledgerId with the wrong wire type is unknown": field(1, 2, HEADER) + field(2, 0, 0)
    + field(101, 2, field(1, 0, 0) + field(2, 2, b"\5") + field(3, 0, 7)),
    "every status": field(1, 2, HEADER) + field(2, 0, 507) + field(101, 2, field(1, 0, 506) + field(2, 0, -1)
                                                                    + field(3, 0, -1)),
    "a read's answer beside the add's": field(1, 2, HEADER) + field(2, 0, 0) + field(101, 2, ANSWER)
    + field(100, 2, field(1, 0, 0) + field(2, 0, 5) + field(3, 0, 7)),
    "readResponse's number with a varint is unknown": field(1, 2, HEADER) + field(2, 0, 0) + field(101, 2, ANSWER)
    + field(100, 0, 1),
    "no status": field(1, 2, HEADER) + field(101, 2, ANSWER),
    "no addResponse": field(1, 2, HEADER) + field(2, 0, 0),
    "no header": field(2, 0, 0) + field(101, 2, ANSWER),
    "no entryId": field(1, 2, HEADER) + field(2, 0, 0) + field(101, 2, field(1, 0, 0) + field(2, 0, 5)),
    "a group": field(1, 2, HEADER) + field(2, 0, 0) + field(101, 2, ANSWER) + varint(60 << 3 | 3)
    + field(1, 0, 9) + varint(60 << 3 | 4),
    "length beyond the frame": field(1, 2, HEADER) + field(2, 0, 0) + varint(101 << 3 | 2)
    + varint(len(ANSWER) + 1) + ANSWER,
}


@pytest.mark.parametrize("name", HAND_BUILT)
def test_the_wire_rules_are_protobufs(name: str) -> None:
    frame = HAND_BUILT[name]
    assert _native.decode_add_response(frame) == reference(frame)


def test_well_formed_answers_decode_to_their_fields() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        frame = answer_frame(rng)
        expected = reference(frame)
        assert expected is not None
        assert _native.decode_add_response(frame) == expected


def test_damaged_frames_are_never_misread() -> None:
    rng = random.Random(4)
    seeds = [answer_frame(rng) for _ in range(40)] + list(HAND_BUILT.values())
    answers_seen = 0
    for data in damaged(rng, seeds, 60_000):
        expected = reference(data)
        answers_seen += expected is not None
        assert _native.decode_add_response(data) == expected, data.hex()
    assert answers_seen > 1000  # the mutations leave many frames that are still add responses


@pytest.mark.parametrize("status", list(StatusCode))
def test_the_bookies_answer_reaches_the_client_as_sent(status: StatusCode) -> None:
    request = m.AddRequest(m.Wire.v3(2**40 + 3, high_priority=True), 5, 7, b"k" * 20, b"e" * 40)
    sent = m.AddResponse(request.wire, status, 5, 7)
    frame = codec.encode_add_ok(request) if status == StatusCode.EOK else codec.encode_response(request, sent)
    received = client_codec.decode_response(frame[4:], 3)
    # The bookie's answer carries the request's transaction id, not its priority.
    assert received == m.AddResponse(m.Wire(3, 2**40 + 3, 3, False), status, 5, 7)
