"""A replica move shares the ledger's under-replication lock with replication workers and every bookie's
over-replicated GC, which hold it for moments. A move asked again after it finished is a no-op without taking the
lock (it once failed, "being re-replicated by another worker", when the source's GC was deleting its moved copy
at that instant), and a move that finds the lock held waits for it instead of failing."""

from __future__ import annotations

import asyncio
import time

from bookie.client import BookKeeper, ClientConfig

from tests.support import rest
from tests.support.bookies import BookieFactory, BookieSet

MOVE = "/api/v1/autorecovery/move_replica"
HELD_S = 2.0  # how long the test holds the lock


async def _finished(url: str, ledger_id: int, within: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        answer = await rest.get(url + MOVE, ledger_id=str(ledger_id))
        assert answer.status == 200, answer.text
        if (move := answer.json())["state"] != "running":
            return dict(move)
        await asyncio.sleep(0.1)
    raise AssertionError(f"the move of ledger {ledger_id} still running after {within:.0f} s")


async def test_a_move_waits_for_a_held_lock_and_a_redo_needs_none(bookie_factory: BookieFactory) -> None:
    cluster: BookieSet = await asyncio.to_thread(bookie_factory, 4, autoRecoveryDaemonEnabled=True)
    config = ClientConfig(zk_servers=cluster.zk_connect, ledgers_root=cluster.ledgers_root)
    async with BookKeeper(config) as bk:
        lh = await bk.create_ledger(3, 2, 2)
        for i in range(30):
            await lh.add(b"entry-%d" % i)
        await lh.close()
        source, target = lh.ensemble[0], next(b for b in cluster.ids if b not in lh.ensemble)
        url = next(b for b in cluster.bookies if b.bookie_id == target).http_url
        body = {"ledger_id": lh.ledger_id, "bookie_src": source, "bookie_dest": target}

        # Another holder (as a replication worker or a GC would) has the lock while the move is asked for.
        assert await bk.store.acquire_underreplicated_lock(lh.ledger_id, "another-holder")
        asked = time.monotonic()
        assert (await rest.put(url + MOVE, body)).status == 202
        await asyncio.sleep(HELD_S)
        await bk.store.release_underreplicated_lock(lh.ledger_id)
        move = await _finished(url, lh.ledger_id)
        assert move["state"] == "moved", move
        assert time.monotonic() - asked >= HELD_S, "it moved while another held the lock"
        moved = (await bk.ledger_metadata(lh.ledger_id)).value.ensembles
        assert all(source not in e and target in e for e in moved.values()), moved

        # Asked again while the lock is held again: nothing to do, so nothing waits and nothing fails.
        assert await bk.store.acquire_underreplicated_lock(lh.ledger_id, "another-holder")
        try:
            assert (await rest.put(url + MOVE, body)).status == 202
            again = await _finished(url, lh.ledger_id, within=HELD_S * 5)
        finally:
            await bk.store.release_underreplicated_lock(lh.ledger_id)
        assert again["state"] == "moved", again
        assert (await bk.ledger_metadata(lh.ledger_id)).value.ensembles == moved
