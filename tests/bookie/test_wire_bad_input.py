"""Malformed or oversized frames close that connection only; backpressure answers ETOOMANYREQUESTS."""

from __future__ import annotations

import asyncio
import random

import pytest
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory, BookieSet
from tests.support.raw_client import MASTER_KEY, RawConnection, entry


async def _closed_by_peer(conn: RawConnection) -> bool:
    try:
        data = await asyncio.wait_for(conn.reader.read(1), 10)
    except ConnectionError:
        return True
    return data == b""


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x08" + b"\xff" * 8,                       # neither a v2 header nor a v3 message
    b"\x00\x00\x00\x03abc",                                   # shorter than any header
    (6 * 1024 * 1024).to_bytes(4, "big") + b"\x00" * 64,      # announces a frame over the 5 MiB limit
])
async def test_bad_frame_closes_only_its_connection(bookies: BookieSet, garbage: bytes) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[0].bookie_id, 3) as good, \
            await RawConnection.open(bookies[0].bookie_id, 3) as bad:
        assert (await good.add(ledger, 0)).status == StatusCode.EOK
        await bad.send_raw(garbage)
        assert await _closed_by_peer(bad)
        assert (await good.add(ledger, 1)).status == StatusCode.EOK
        assert (await good.read(ledger, 0)).status == StatusCode.EOK


async def test_adds_beyond_the_pending_limit_get_etoomanyrequests(bookie_factory: BookieFactory) -> None:
    # A slow journal (every group waits 200 ms) keeps adds pending; the limit is 5.
    cluster = bookie_factory(1, maxPendingAddRequestsPerThread=5, journalMaxGroupWaitMSec=200,
                             journalBufferedWritesThreshold=100_000_000)
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(cluster[0].bookie_id, 3) as conn:
        requests = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, b"x")) for i in range(30)]
        responses = await conn.pipeline(requests)
    statuses = [r.status for r in responses]
    assert StatusCode.ETOOMANYREQUESTS in statuses
    assert StatusCode.EOK in statuses
    assert set(statuses) <= {StatusCode.EOK, StatusCode.ETOOMANYREQUESTS}


async def test_in_progress_limit_pauses_instead_of_failing(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, maxAddsInProgressLimit=2, journalMaxGroupWaitMSec=50)
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(cluster[0].bookie_id, 2) as conn:
        requests = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, b"x")) for i in range(40)]
        responses = await conn.pipeline(requests)
    assert {r.status for r in responses} == {StatusCode.EOK}
