"""Clients keep reading and writing while GC compacts and deletes logs under them: no read fails, every
entry reads back identical, before, during and after the relocation."""

from __future__ import annotations

import asyncio

from tests.gc.gcutil import COMPACTION_MODES, client, compaction_overrides, gc_now, log_sizes, read_all, write_ledger
from tests.support.bookies import BookieFactory


@COMPACTION_MODES
async def test_reads_and_writes_during_compaction(bookie_factory: BookieFactory, transactional: bool) -> None:
    # Throttled (about 2 s of compaction) with no read cache, so reads really go to the entry logs. Without
    # transactions, compaction appends to the very log these writes go to.
    cluster = bookie_factory(1, **compaction_overrides(transactional, compactionRateByEntries=150,
                                                       dbStorage_readAheadCacheMaxSizeMb=0))
    bookie = cluster[0]
    async with client(cluster) as bk:
        live = {}
        dead = []
        for seed in range(3):
            lid, payloads = await write_ledger(bk, 100, 4096, seed)
            live[lid] = payloads
            gone, _ = await write_ledger(bk, 300, 4096, seed + 100)
            dead.append(gone)
        bookie.restart()
        before = set(log_sizes(bookie))
        for lid in dead:
            await bk.delete_ledger(lid)

        stop = asyncio.Event()
        reads = 0

        async def reader() -> None:
            nonlocal reads
            while not stop.is_set():
                for lid, payloads in list(live.items()):
                    assert await read_all(bk, lid) == payloads
                    reads += 1

        async def writer() -> None:
            seed = 1000
            while not stop.is_set():
                lid, payloads = await write_ledger(bk, 20, 4096, seed)
                live[lid] = payloads
                seed += 1

        tasks = [asyncio.create_task(reader()), asyncio.create_task(writer())]
        try:
            await gc_now(bookie)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        assert reads >= 3
        assert not before <= set(log_sizes(bookie)), "logs were compacted away under the readers"
        for lid, payloads in live.items():
            assert await read_all(bk, lid) == payloads
