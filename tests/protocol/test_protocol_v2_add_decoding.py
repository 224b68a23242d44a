"""A v2 add frame (packet header, 20-byte master key, entry) decodes to the fields its bytes say, for every
version byte, every flag and any ids; a shorter one is refused by name; other opcodes are not taken for adds.

The reference is the layout itself, read with ``struct`` here: the bookie decodes adds in C
(``bookie.protocol._native``)."""

from __future__ import annotations

import random
import struct

import bookie.protocol.codec as codec
import bookie.protocol.messages as m
import pytest

ENTRY_HEADER = 32
RECOVERY_ADD, HIGH_PRIORITY = 0x0002, 0x0004  # BookieProtocol.FLAG_RECOVERY_ADD, FLAG_HIGH_PRIORITY


def v2_add(version: int, flags: int, key: bytes, entry: bytes, opcode: int = 1) -> bytes:
    header = opcode if version == 0 else (version << 24) | (opcode << 16) | flags
    return struct.pack(">I", header) + key + entry


def test_adds_decode_to_their_fields() -> None:
    rng = random.Random(3)
    for _ in range(5000):
        version, flags = rng.randrange(256), rng.randrange(1 << 16)
        ledger_id, entry_id = rng.randrange(-2**63, 2**63), rng.choice([-1, 0, rng.randrange(2**63)])
        key = rng.randbytes(20)
        entry = struct.pack(">qq", ledger_id, entry_id) + rng.randbytes(rng.choice([16, 17, 1000]))
        request = codec.decode_request(v2_add(version, flags, key, entry))
        assert isinstance(request, m.AddRequest)
        flags = 0 if version == 0 else flags  # a version-0 header is the opcode alone
        assert request.wire == m.Wire(2, 0, version, bool(flags & HIGH_PRIORITY))
        assert (request.ledger_id, request.entry_id, request.master_key) == (ledger_id, entry_id, key)
        assert request.recovery == bool(flags & RECOVERY_ADD)
        assert isinstance(request.body, memoryview) and bytes(request.body) == entry


@pytest.mark.parametrize("entry_size", [0, 1, ENTRY_HEADER - 1])
def test_an_add_shorter_than_key_and_entry_header_is_refused_by_name(entry_size: int) -> None:
    with pytest.raises(codec.MalformedFrame, match="shorter than master key \\+ entry header"):
        codec.decode_request(v2_add(2, 0, b"k" * 20, b"\0" * entry_size))


def test_other_opcodes_are_not_taken_for_adds() -> None:
    read = struct.pack(">iqq", (2 << 24) | (2 << 16), 5, 7) + b"\0" * 40  # READENTRY, padded to an add's size
    request = codec.decode_request(read)
    assert isinstance(request, m.ReadRequest) and (request.ledger_id, request.entry_id) == (5, 7)
    with pytest.raises(codec.MalformedFrame, match="v2 opcode 9 is not served"):
        codec.decode_request(v2_add(2, 0, b"k" * 20, b"\0" * 40, opcode=9))
