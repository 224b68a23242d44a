"""Tailing readers: a reader that opened without recovery follows the writer through long-poll reads
(readLastAddConfirmedAndEntry) and explicit LAC, and a deleted ledger is gone (v3 protocol)."""

from __future__ import annotations

import asyncio

import pytest
from bookie.client import BookKeeper
from bookie.client.errors import NoSuchLedger

from tests.support.java_bookies import BookieCluster


async def test_long_poll_returns_the_next_entry_as_soon_as_it_is_confirmed(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk, BookKeeper(cluster.client_config()) as rbk:
        lh = await bk.create_ledger(3, 3, 2)
        await lh.add(b"first")
        reader = await rbk.open_ledger(lh.ledger_id, recovery=False)
        # Nothing new: the long poll times out with no entry.
        lac, entry = await reader.read_lac_and_entry(1, timeout_ms=300)
        assert entry is None and lac < 1
        # Entry 1 becomes confirmed when entry 2 (carrying LAC 1) arrives while the reader waits.
        poll = asyncio.create_task(reader.read_lac_and_entry(1, timeout_ms=10_000, parallel=True))
        await asyncio.sleep(0.2)
        await lh.add(b"second")
        await lh.add(b"third")
        lac, entry = await asyncio.wait_for(poll, 10)
        assert entry is not None and entry.entry_id == 1 and entry.payload == b"second" and lac >= 1
        await lh.close()


async def test_explicit_lac_makes_the_last_entry_visible_to_readers(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk, BookKeeper(cluster.client_config()) as rbk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(5):
            await lh.add(b"%d" % i)
        reader = await rbk.open_ledger(lh.ledger_id, recovery=False)
        assert await reader.read_last_add_confirmed() == 3  # piggybacked LAC lags one entry
        await lh.write_lac()
        assert await reader.read_explicit_lac() == 4
        assert (await reader.read(4))[0].payload == b"4"


async def test_periodic_explicit_lac(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config(explicit_lac_interval_s=0.1)) as bk, \
            BookKeeper(cluster.client_config()) as rbk:
        lh = await bk.create_ledger(2, 2, 2)
        await lh.add(b"only")
        reader = await rbk.open_ledger(lh.ledger_id, recovery=False)
        for _ in range(50):
            if await reader.read_explicit_lac() == 0:
                break
            await asyncio.sleep(0.1)
        assert reader.last_add_confirmed == 0
        await lh.close()


async def test_deleted_ledger_is_gone(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(2, 2, 2)
        await lh.add(b"x")
        await lh.close()
        assert lh.ledger_id in await bk.list_ledgers()
        await bk.delete_ledger(lh.ledger_id)
        assert lh.ledger_id not in await bk.list_ledgers()
        with pytest.raises(NoSuchLedger):
            await bk.open_ledger(lh.ledger_id)
        with pytest.raises(NoSuchLedger):
            await bk.delete_ledger(lh.ledger_id)
