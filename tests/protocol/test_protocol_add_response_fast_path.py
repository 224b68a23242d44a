"""The request hot path's add answer (C, ``codec.encode_add_ok``, built without protobuf objects) is byte for
byte what the general encoder produces, over v3 and v2 (every header version a bookie takes), for small, large
and negative ids and transaction ids."""

from __future__ import annotations

import random

import pytest
from bookie.protocol import client_codec, codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

IDS = [0, 1, 127, 128, 16383, 16384, 2**31 - 1, 2**32, 2**40 + 7, 2**63 - 1, -1, -2**63]
TXNS = [0, 1, 127, 128, 300, 2**32 + 1, 2**63 - 1, 2**64 - 1]


@pytest.mark.parametrize(("version", "protocol_version"), [(2, 0), (2, 1), (2, 2), (3, 3)])
def test_fast_add_response_matches_the_general_encoder(version: int, protocol_version: int) -> None:
    rng = random.Random(8)
    cases = [(t, lid, eid) for t in TXNS for lid in IDS for eid in [*IDS[:6], -1]]
    cases += [(rng.randrange(2**64), rng.randrange(-2**63, 2**63), rng.randrange(-1, 2**40)) for _ in range(2000)]
    for txn, ledger_id, entry_id in cases:
        wire = m.Wire.v3(txn) if version == 3 else m.Wire(2, 0, protocol_version)
        request = m.AddRequest(wire, ledger_id, entry_id, b"k" * 20, b"\0" * 40)
        expected = codec.encode_response(request, m.AddResponse(wire, StatusCode.EOK, ledger_id, entry_id))
        assert codec.encode_add_ok(request) == expected, (txn, ledger_id, entry_id)


def test_fast_add_response_decodes_as_an_ok_add_response() -> None:
    request = m.AddRequest(m.Wire.v3(42), 7, 9, b"k" * 20, b"\0" * 40)
    frame = codec.encode_add_ok(request)
    response = client_codec.decode_response(frame[4:], 3)
    assert isinstance(response, m.AddResponse)
    assert (response.status, response.ledger_id, response.entry_id, response.wire.txn_id) == (StatusCode.EOK, 7, 9, 42)
