"""Our client's v3 add request is byte for byte what protobuf writes for it.

``client_codec.encode_request`` writes every v3 append in C (``_native.encode_add``) and every other request
with protobuf's classes. For generated adds (ids across the int64 range, every key and body size, recovery,
high priority, write flags of both signs) the frame equals protobuf's serialization of the same message, and
the bookie decodes it back to the request that was sent.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest
from bookie.protocol import _native, client_codec, codec
from bookie.protocol import codes as c
from bookie.protocol import messages as m
from bookie.protocol.proto import BookkeeperProtocol_pb2 as _pb

pb: Any = _pb


def protobuf_frame(r: m.AddRequest) -> bytes:
    """The reference: the same request built as a protobuf message and serialized."""
    msg = pb.Request()
    msg.header.version = pb.VERSION_THREE
    msg.header.operation = pb.ADD_ENTRY
    msg.header.txnId = r.wire.txn_id
    if r.wire.high_priority:
        msg.header.priority = c.HIGH_PRIORITY_VALUE
    add = msg.addRequest
    add.ledgerId, add.entryId, add.masterKey, add.body = r.ledger_id, r.entry_id, r.master_key, bytes(r.body)
    if r.recovery:
        add.flag = pb.AddRequest.RECOVERY_ADD
    if r.write_flags:
        add.writeFlags = r.write_flags
    payload = msg.SerializeToString()
    return struct.pack(">i", len(payload)) + payload


def generated_add(rng: random.Random) -> m.AddRequest:
    wire = m.Wire.v3(rng.choice([0, 1, 127, 128, 2**32, 2**64 - 1, rng.randrange(2**64)]), rng.random() < 0.3)
    body = rng.randbytes(rng.choice([0, 1, 32, 127, 128, 1024, 70_000]))
    return m.AddRequest(wire, rng.choice([0, 1, 2**63 - 1, -1, -2**63, rng.randrange(-2**63, 2**63)]),
                        rng.choice([0, 1, -1, rng.randrange(2**40)]), rng.randbytes(rng.choice([0, 20, 200])),
                        memoryview(body) if rng.random() < 0.5 else body, recovery=rng.random() < 0.3,
                        write_flags=rng.choice([0, 0, 1, -1, 2**31 - 1, -2**31]))


def test_generated_adds_are_written_as_protobuf_writes_them() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        request = generated_add(rng)
        assert client_codec.encode_request(request) == protobuf_frame(request)


def test_the_bookie_reads_back_the_add_that_was_sent() -> None:
    rng = random.Random(6)
    for _ in range(500):
        sent = generated_add(rng)
        if len(sent.body) < 32:  # the bookie refuses an entry shorter than its header
            sent.body = bytes(sent.body) + bytes(32)
        received = codec.decode_request(client_codec.encode_request(sent)[4:])
        assert isinstance(received, m.AddRequest)
        assert received.wire == sent.wire
        assert (received.ledger_id, received.entry_id, received.master_key, bytes(received.body),
                received.recovery, received.write_flags) == (sent.ledger_id, sent.entry_id, sent.master_key,
                                                             bytes(sent.body), sent.recovery, sent.write_flags)


@pytest.mark.parametrize(("argument", "value"), [("priority", 2**32), ("write_flags", 2**31), ("txn_id", -1)])
def test_values_outside_their_field_are_refused(argument: str, value: int) -> None:
    args: dict[str, Any] = {"txn_id": 1, "priority": 0, "ledger_id": 1, "entry_id": 0, "master_key": b"k", "body": b"b",
            "recovery": False, "write_flags": 0} | {argument: value}
    with pytest.raises(OverflowError):
        _native.encode_add(*args.values())
