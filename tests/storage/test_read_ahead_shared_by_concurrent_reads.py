"""Catch-up reads from entry logs: outstanding reads of one ledger share its read-ahead.

A reader catching up sends many reads at once (our client keeps up to 256 outstanding). When none of those
entries is cached, each read used to go to the entry log on its own and read ahead on its own, so one batch of
entries was read, parsed and cached dozens of times over. A ledger's disk reads now go one at a time, as
BookKeeper's reads of a ledger share one ordered thread: the reads that wait find their entries in the read
cache. Read-ahead reads the file in pieces sized to the batch, not its whole byte budget at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bookie.storage.engine import StorageEngine

from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 3


async def _flushed_ledger(engine: StorageEngine, bodies: list[bytes]) -> None:
    for eid, fill in enumerate(bodies):
        await engine.add_entry(entry(LEDGER, eid, fill), MASTER_KEY)
    await engine.checkpoint()  # every entry in an entry log, none in the write cache


async def test_outstanding_reads_of_a_ledger_cost_one_entry_log_read_per_read_ahead_batch(engines: Any) -> None:
    engine = await engines(enableStatistics=True, dbStorage_readAheadCacheBatchSize=100)
    bodies = [b"%d" % i * 100 for i in range(300)]
    await _flushed_ledger(engine, bodies)
    d = engine.dir_of(LEDGER)

    read = await asyncio.gather(*(engine.read_entry(LEDGER, i) for i in range(300)))

    assert read == [entry(LEDGER, i, fill) for i, fill in enumerate(bodies)]
    disk_reads = d.readahead_count_stat.ok.count
    assert disk_reads <= 3, f"{disk_reads} entry-log reads for 300 entries in batches of 100"


async def test_reads_of_two_ledgers_at_once_both_complete_and_leave_no_read_marked_under_way(engines: Any) -> None:
    engine = await engines(enableStatistics=True, dbStorage_readAheadCacheBatchSize=10)
    for ledger in (LEDGER, LEDGER + 1):
        for eid in range(5):
            await engine.add_entry(entry(ledger, eid, b"x"), MASTER_KEY)
    await engine.checkpoint()

    first, other = await asyncio.gather(engine.read_entry(LEDGER, 0), engine.read_entry(LEDGER + 1, 0))

    assert (first, other) == (entry(LEDGER, 0, b"x"), entry(LEDGER + 1, 0, b"x"))
    assert engine._disk_reads == {}, "no disk read is left marked as under way"


async def test_a_failed_disk_read_lets_the_waiting_reads_go_on(engines: Any) -> None:
    engine = await engines(enableStatistics=True)
    await _flushed_ledger(engine, [b"a", b"b"])
    missing = engine.read_entry(LEDGER, 7)  # no such entry: the read fails in the read pool

    results = await asyncio.gather(missing, engine.read_entry(LEDGER, 1), return_exceptions=True)

    assert type(results[0]).__name__ == "NoEntryError"
    assert results[1] == entry(LEDGER, 1, b"b")


async def test_read_ahead_of_entries_of_varied_sizes_reads_past_its_first_guess(engines: Any) -> None:
    # The first entry is small, so the first piece read is sized for small entries; the batch's larger entries
    # that follow still all come into the cache, up to the batch size.
    engine = await engines(enableStatistics=True, dbStorage_readAheadCacheBatchSize=50)
    bodies = [b"s"] + [b"L" * 20_000] * 60
    await _flushed_ledger(engine, bodies)
    d = engine.dir_of(LEDGER)

    assert await engine.read_entry(LEDGER, 0) == entry(LEDGER, 0, b"s")

    cached = [i for i in range(61) if d.read_cache.get(LEDGER, i) is not None]
    assert cached == list(range(1, 50)), "the read entry's 49 followers: batch size 50"
    assert all(d.read_cache.get(LEDGER, i) == entry(LEDGER, i, bodies[i]) for i in cached)


async def test_read_ahead_stops_at_its_byte_budget(engines: Any) -> None:
    engine = await engines(enableStatistics=True, dbStorage_readAheadCacheBatchSize=100,
                           dbStorage_readAheadCacheBatchBytesSize=100_000)
    await _flushed_ledger(engine, [b"m" * 10_000] * 30)
    d = engine.dir_of(LEDGER)

    await engine.read_entry(LEDGER, 0)

    cached = [i for i in range(30) if d.read_cache.get(LEDGER, i) is not None]
    assert cached == list(range(1, 10)), "nine records of ~10 KB fit in a 100,000-byte budget, not ten"


async def test_without_a_byte_limit_read_ahead_takes_its_whole_entry_count(engines: Any) -> None:
    # dbStorage_readAheadCacheBatchBytesSize -1 (the default), as in BookKeeper: only the entry count bounds a
    # batch (and half the read cache, which must hold it): 99 entries of 20 KB, about 2 MB, all come in.
    engine = await engines(enableStatistics=True, dbStorage_readAheadCacheBatchSize=100)
    await _flushed_ledger(engine, [b"L" * 20_000] * 120)
    d = engine.dir_of(LEDGER)

    await engine.read_entry(LEDGER, 0)

    assert [i for i in range(120) if d.read_cache.get(LEDGER, i) is not None] == list(range(1, 100))
