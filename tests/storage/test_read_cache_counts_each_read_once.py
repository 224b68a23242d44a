"""The read cache's hit and miss counts (``bookie_read_cache_hits`` / ``_misses``) count each read once: a miss
when the read goes to an entry log, a hit when it finds its entry in the read cache, including a read that
waited for another read's read-ahead. Entries still in the write cache are neither."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from bookie.config import BookieConfig
from bookie.storage.engine import StorageEngine

from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 9


@pytest_asyncio.fixture
async def engine(tmp_path: Path) -> AsyncIterator[StorageEngine]:
    engine = StorageEngine(BookieConfig.from_mapping({
        "journalDirectories": str(tmp_path / "journal"), "ledgerDirectories": str(tmp_path / "l0"),
        "flushInterval": 60000, "journalMaxGroupWaitMSec": 0, "dbStorage_readAheadCacheBatchSize": 10}))
    await engine.start()
    for eid in range(20):
        await engine.add_entry(entry(LEDGER, eid, b"c"), MASTER_KEY)
    await engine.checkpoint()
    await engine.add_entry(entry(LEDGER, 20, b"c"), MASTER_KEY)  # stays in the write cache
    yield engine
    await engine.close()


def _counts(engine: StorageEngine) -> tuple[int, int]:
    cache = engine.dir_of(LEDGER).read_cache
    return cache.hits, cache.misses


async def test_concurrent_reads_count_one_miss_per_entry_log_read_and_a_hit_for_every_other(
        engine: StorageEngine) -> None:
    await asyncio.gather(*(engine.read_entry(LEDGER, i) for i in range(10)))  # 0 from disk, 1..9 read ahead
    assert _counts(engine) == (9, 1)


async def test_reads_from_memory_count_hits_only_for_the_read_cache(engine: StorageEngine) -> None:
    await engine.read_entry(LEDGER, 0)
    assert engine.read_cached(LEDGER, 1) == entry(LEDGER, 1, b"c")
    assert engine.read_cached(LEDGER, 20) == entry(LEDGER, 20, b"c")  # the write cache: not counted
    assert engine.read_cached(LEDGER, 15) is None  # on disk only: the general read counts its miss
    assert _counts(engine) == (1, 1)
    await engine.read_entry(LEDGER, 15)
    assert _counts(engine) == (1, 2)
