"""Adds and reads over both BookKeeper protocols, with BookKeeper's status codes."""

from __future__ import annotations

import random

import pytest
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieSet
from tests.support.raw_client import MASTER_KEY, RawConnection, entry


def new_ledger_id() -> int:
    return random.randrange(1, 2**40)


@pytest.mark.parametrize("version", [2, 3])
async def test_entries_read_back_byte_identical(bookies: BookieSet, version: int) -> None:
    ledger = new_ledger_id()
    async with await RawConnection.open(bookies[0].bookie_id, version) as conn:
        sent = [entry(ledger, i, random.randbytes(random.randrange(1, 5000))) for i in range(50)]
        for i, body in enumerate(sent):
            response = await conn.add(ledger, i, body=body)
            assert (response.status, response.ledger_id, response.entry_id) == (StatusCode.EOK, ledger, i)
        for i, body in enumerate(sent):
            response = await conn.read(ledger, i)
            assert response.status == StatusCode.EOK
            assert bytes(response.body) == body


@pytest.mark.parametrize("version", [2, 3])
async def test_pipelined_adds_are_all_acknowledged(bookies: BookieSet, version: int) -> None:
    ledger = new_ledger_id()
    async with await RawConnection.open(bookies[1].bookie_id, version) as conn:
        requests = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, b"p" * 100))
                    for i in range(500)]
        responses = await conn.pipeline(requests)
    assert sorted(r.entry_id for r in responses) == list(range(500))
    assert {r.status for r in responses} == {StatusCode.EOK}


@pytest.mark.parametrize("version", [2, 3])
async def test_missing_ledger_and_missing_entry_have_distinct_codes(bookies: BookieSet, version: int) -> None:
    ledger = new_ledger_id()
    async with await RawConnection.open(bookies[0].bookie_id, version) as conn:
        assert (await conn.read(ledger, 0)).status == StatusCode.ENOLEDGER
        await conn.add(ledger, 0)
        assert (await conn.read(ledger, 5)).status == StatusCode.ENOENTRY


async def test_entry_minus_one_is_the_last_entry_and_lac_is_piggybacked(bookies: BookieSet) -> None:
    ledger = new_ledger_id()
    async with await RawConnection.open(bookies[2].bookie_id, 3) as conn:
        for i in range(5):
            await conn.add(ledger, i, b"e%d" % i)
        last = await conn.read(ledger, -1)
    assert last.status == StatusCode.EOK
    assert bytes(last.body) == entry(ledger, 4, b"e4")
    assert last.max_lac == 3  # LAC carried by entry 4


@pytest.mark.parametrize("version", [2, 3])
async def test_wrong_master_key_is_refused(bookies: BookieSet, version: int) -> None:
    ledger = new_ledger_id()
    async with await RawConnection.open(bookies[0].bookie_id, version) as conn:
        await conn.add(ledger, 0)
        response = await conn.add(ledger, 1, key=b"k" * 20)
    assert response.status == StatusCode.EUA


async def test_v3_request_with_wrong_protocol_version_gets_ebadversion(bookies: BookieSet) -> None:
    from typing import Any

    from bookie.protocol import client_codec
    from bookie.protocol.proto import BookkeeperProtocol_pb2

    pb: Any = BookkeeperProtocol_pb2  # generated code has no type stubs
    request = pb.Request()
    request.header.version = pb.VERSION_TWO
    request.header.operation = pb.READ_ENTRY
    request.header.txnId = 7
    request.readRequest.ledgerId = new_ledger_id()
    request.readRequest.entryId = 0
    data = request.SerializeToString()
    async with await RawConnection.open(bookies[0].bookie_id, 3) as conn:
        await conn.send_raw(len(data).to_bytes(4, "big") + data)
        response = client_codec.decode_response(await conn.read_frame(), 3)
    assert response.status == StatusCode.EBADVERSION
    assert response.wire.txn_id == 7


async def test_entries_survive_a_checkpoint_into_entry_logs(bookies: BookieSet) -> None:
    """flushInterval is 1 s in tests: after it, reads come from entry logs and the RocksDB index."""
    import asyncio

    ledger = new_ledger_id()
    async with await RawConnection.open(bookies[1].bookie_id, 3) as conn:
        bodies = [entry(ledger, i, random.randbytes(300)) for i in range(20)]
        for i, body in enumerate(bodies):
            await conn.add(ledger, i, body=body)
        await asyncio.sleep(2.5)
        for i, body in enumerate(bodies):
            assert bytes((await conn.read(ledger, i)).body) == body
