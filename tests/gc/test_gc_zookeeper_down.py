"""ZooKeeper stopped or paused in the middle of a GC cycle: no ledger is deleted, the cycle is retried.

The ledgers sit in many ZooKeeper ranges (one per 10,000-id leaf), so the range listing takes many calls and
the server goes away while GC is part-way through it: a GC that took "no more ranges" for "no more ledgers"
would delete every ledger after the failure point.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

from bookie.client import BookKeeper, ClientConfig
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.gc.gcutil import GC_OVERRIDES, metrics, rest
from tests.support.bookies import BookieFactory

LEDGERS = 120


async def test_zookeeper_stopped_mid_cycle_deletes_nothing(bookie_factory: BookieFactory,
                                                           zookeeper_factory: Callable[[], ZooKeeperServer]) -> None:
    zk = zookeeper_factory()
    root = "/gc-zk-down/ledgers"
    cluster = bookie_factory(1, metadataServiceUri=f"zk+hierarchical://{zk.connect_string}{root}", zkTimeout=4000,
                             **GC_OVERRIDES)
    bookie = cluster[0]
    config = ClientConfig(zk_servers=zk.connect_string, ledgers_root=root, zk_session_timeout_ms=4000)
    ids = [(i + 1) * 10000 + random.randrange(10000) for i in range(LEDGERS)]
    async with BookKeeper(config) as bk:
        for lid in ids:
            handle = await bk.create_ledger(1, 1, 1, password=b"gc", ledger_id=lid)
            await handle.add(b"entry of %d" % lid)
            await handle.close()

    gc_url = f"{bookie.http_url}/api/v1/bookie/gc"
    for delay in (None, 0.0, 0.01, 0.03):
        await rest("PUT", gc_url, {})
        if delay is not None:
            await asyncio.sleep(delay)
        zk.stop()
        await asyncio.sleep(0.5)  # GC runs against a dead server (each call fails at once or times out)
        zk.start()
        await _wait_gc_idle(gc_url)
    errors = (await metrics(bookie))["bookie_GC_METADATA_ERROR_TOTAL"]
    assert errors >= 1, "some cycles did meet the dead ZooKeeper"
    assert (await metrics(bookie))["bookie_DELETED_LEDGER_TOTAL"] == 0

    async with BookKeeper(config) as bk:
        gone = ids.pop()
        await bk.delete_ledger(gone)  # once ZooKeeper is back, GC works again, and precisely
        deadline = asyncio.get_running_loop().time() + 30
        while (await metrics(bookie))["bookie_DELETED_LEDGER_TOTAL"] == 0:
            assert asyncio.get_running_loop().time() < deadline, "GC never recovered from the outage"
            await rest("PUT", gc_url, {})
            await _wait_gc_idle(gc_url)
        assert (await metrics(bookie))["bookie_DELETED_LEDGER_TOTAL"] == 1
        for lid in ids:
            handle = await bk.open_ledger(lid, b"gc", recovery=False)
            assert (await handle.read(0))[0].payload == b"entry of %d" % lid


async def _wait_gc_idle(url: str, within: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        try:
            if (await rest("GET", url))["is_in_force_gc"] == "false":
                return
        except AssertionError:
            pass
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.1)
