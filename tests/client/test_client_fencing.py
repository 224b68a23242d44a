"""Fencing: once another client opens a ledger for recovery, its writer gets a clear error on the next add,
and of two writers on one ledger exactly one survives, with every entry the loser had acknowledged."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from bookie.client import BookKeeper
from bookie.client.errors import LedgerFencedError

from tests.support.java_bookies import BookieCluster


async def test_fenced_writer_gets_a_clear_error(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as writer_bk, BookKeeper(cluster.client_config()) as bk:
        lh = await writer_bk.create_ledger(3, 3, 2)
        for i in range(10):
            await lh.add(b"%d" % i)
        await bk.open_ledger(lh.ledger_id)  # recovery fences the bookies
        with pytest.raises(LedgerFencedError) as info:
            await lh.add(b"after-fence")
        message = str(info.value)
        assert f"ledger {lh.ledger_id}" in message and "fenced" in message and "another client" in message
        assert lh.is_fenced
        with pytest.raises(LedgerFencedError):  # and every later add too
            await lh.add(b"again")
        await lh.close()  # does not undo the recovery
        md = (await bk.ledger_metadata(lh.ledger_id)).value
        assert md.closed and md.last_entry_id == 9


async def test_two_writers_exactly_one_survives(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as first_bk, BookKeeper(cluster.client_config()) as second_bk:
        lh = await first_bk.create_ledger(3, 3, 2)
        acked: list[int] = []
        fenced, under_way = asyncio.Event(), asyncio.Event()

        async def first_writer() -> None:
            with contextlib.suppress(LedgerFencedError):
                for i in range(100_000):
                    acked.append(await lh.add(b"first-%d" % i))
                    if i == 50:
                        under_way.set()
            fenced.set()

        task = asyncio.create_task(first_writer())
        await under_way.wait()
        # The second writer takes the ledger over (as a broker taking over a topic would).
        survivor = await second_bk.open_ledger(lh.ledger_id)
        await asyncio.wait_for(fenced.wait(), 30)
        await task
        assert lh.is_fenced and not survivor.is_fenced
        assert survivor.closed
        assert acked == list(range(len(acked)))
        # Nothing the first writer had acknowledged is lost; what the survivor sees is final.
        assert survivor.last_add_confirmed >= acked[-1]
        entries = await survivor.read(0, survivor.last_add_confirmed)
        assert [e.payload for e in entries] == [b"first-%d" % i for i in range(len(entries))]
