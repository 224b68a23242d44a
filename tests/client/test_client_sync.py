"""The blocking wrapper: the same ledger API from code that has no event loop."""

from __future__ import annotations

import asyncio

from bookie.client.sync import SyncBookKeeper

from tests.support.java_bookies import BookieCluster


def _round_trip(cluster: BookieCluster) -> list[bytes]:
    with SyncBookKeeper(cluster.client_config()) as bk:
        lh = bk.create_ledger(3, 2, 2, password=b"p")
        for i in range(10):
            assert lh.add(b"sync-%d" % i) == i
        lh.close()
        rh = bk.open_ledger(lh.ledger_id, b"p")
        payloads = [e.payload for e in rh.read(0, 9)]
        bk.delete_ledger(lh.ledger_id)
        return payloads


async def test_sync_wrapper_round_trip(cluster: BookieCluster) -> None:
    assert await asyncio.to_thread(_round_trip, cluster) == [b"sync-%d" % i for i in range(10)]
