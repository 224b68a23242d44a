"""Last-Add-Confirmed: long-poll reads, piggybacked entries, explicit LAC, force ledger, entry lists."""

from __future__ import annotations

import asyncio
import random

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.entry import available_entries, package_lac

from tests.support.bookies import BookieSet
from tests.support.raw_client import DIGEST, MASTER_KEY, RawConnection


async def test_long_poll_returns_as_soon_as_the_lac_moves(bookies: BookieSet) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[0].bookie_id, 3) as writer, \
            await RawConnection.open(bookies[0].bookie_id, 3) as tailer:
        await writer.add(ledger, 0)
        await writer.add(ledger, 1)  # LAC 0
        poll = asyncio.create_task(tailer.read(ledger, -1, previous_lac=0, timeout_ms=20000, piggyback=True))
        await asyncio.sleep(0.3)
        assert not poll.done()
        await writer.add(ledger, 2)  # LAC 1
        response = await asyncio.wait_for(poll, 10)
    assert response.status == StatusCode.EOK
    assert response.max_lac == 1
    assert response.entry_id == 1 and response.body is not None  # the entry after previous_lac, piggybacked


async def test_long_poll_times_out_with_the_unchanged_lac(bookies: BookieSet) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[1].bookie_id, 3) as conn:
        await conn.add(ledger, 0)
        await conn.add(ledger, 1)
        response = await conn.read(ledger, -1, previous_lac=0, timeout_ms=300, piggyback=True)
    assert response.status == StatusCode.EOK
    assert response.max_lac == 0
    assert not response.body


async def test_explicit_lac_is_stored_and_read_back(bookies: BookieSet) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[2].bookie_id, 3) as conn:
        await conn.add(ledger, 0)
        packet = package_lac(DIGEST, ledger, 0)
        written = await conn.call(m.WriteLacRequest(conn.wire(), ledger, 0, MASTER_KEY, packet))
        assert written.status == StatusCode.EOK
        read = await conn.call(m.ReadLacRequest(conn.wire(), ledger))
    assert read.status == StatusCode.EOK
    assert bytes(read.lac_body) == packet
    assert read.last_entry_body is not None


async def test_force_ledger_and_list_of_entries(bookies: BookieSet) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[0].bookie_id, 3) as conn:
        for i in (0, 1, 2, 5, 6):
            await conn.add(ledger, i)
        forced = await conn.call(m.ForceLedgerRequest(conn.wire(), ledger))
        listed = await conn.call(m.GetListOfEntriesOfLedgerRequest(conn.wire(), ledger))
    assert forced.status == StatusCode.EOK
    assert listed.status == StatusCode.EOK
    assert available_entries(listed.availability) == [0, 1, 2, 5, 6]


async def test_bookie_info_reports_disk_space(bookies: BookieSet) -> None:
    async with await RawConnection.open(bookies[0].bookie_id, 3) as conn:
        info = await conn.call(m.GetBookieInfoRequest(conn.wire(), requested=3))
    assert info.status == StatusCode.EOK
    assert 0 < info.free_disk_space <= info.total_disk_capacity
