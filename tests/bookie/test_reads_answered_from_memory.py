"""Reads of entries a bookie holds in memory (its write cache or read cache) are answered at once, on both
protocols, with the ledger's LAC, and still hold a read slot until their answer is written.

A reader catching up pipelines hundreds of reads; the bookie answers those it can from memory in the same
step it decodes them. ``maxReadsInProgressLimit`` then stops reading the connection (it never refuses) until
written answers free slots, so a pipeline of many more reads than slots is answered in full, and an entry
that is only on disk still takes the general way.
"""

from __future__ import annotations

import asyncio
import random

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection, entry

ENTRIES = 50


async def test_a_pipeline_of_reads_over_the_slot_limit_is_answered_in_full(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, maxReadsInProgressLimit=4, flushInterval=600000)[0]
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(ENTRIES):
            assert (await conn.add(ledger, i, b"p%d" % i)).status == StatusCode.EOK
        reads = [m.ReadRequest(conn.wire(), ledger, i % ENTRIES) for i in range(10 * ENTRIES)]

        answers = await conn.pipeline(reads)

    assert [a.status for a in answers] == [StatusCode.EOK] * len(reads), "no read refused or failed"
    by_entry = {a.entry_id: bytes(a.body) for a in answers}
    assert by_entry == {i: entry(ledger, i, b"p%d" % i) for i in range(ENTRIES)}


async def test_v2_and_v3_reads_of_cached_entries_carry_the_ledger_lac(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, flushInterval=600000)[0]
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(3):  # each entry carries the LAC before it: entry 2 makes 1 the LAC
            assert (await conn.add(ledger, i, b"x")).status == StatusCode.EOK
        v3 = await conn.read(ledger, 0)
    async with await RawConnection.open(bookie.bookie_id, version=2) as conn:
        v2 = await conn.read(ledger, 1)

    assert v3.status == StatusCode.EOK and bytes(v3.body) == entry(ledger, 0, b"x")
    assert v3.max_lac == 1
    assert v2.status == StatusCode.EOK and bytes(v2.body) == entry(ledger, 1, b"x")


async def test_reads_of_entries_in_memory_and_on_disk_interleave(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, flushInterval=600000, dbStorage_readAheadCacheMaxSizeMb=0)[0]
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(ENTRIES):
            assert (await conn.add(ledger, i, b"d")).status == StatusCode.EOK
    bookie.stop()  # a clean stop checkpoints: every entry now on disk only
    bookie.start(wait=True)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(ENTRIES, 2 * ENTRIES):  # these stay in the write cache
            assert (await conn.add(ledger, i, b"m")).status == StatusCode.EOK
        answers = await asyncio.wait_for(conn.pipeline(
            [m.ReadRequest(conn.wire(), ledger, i) for i in range(2 * ENTRIES)]), 30)

    assert {a.entry_id: bytes(a.body) for a in answers if a.status == StatusCode.EOK} == {
        i: entry(ledger, i, b"d" if i < ENTRIES else b"m") for i in range(2 * ENTRIES)}
