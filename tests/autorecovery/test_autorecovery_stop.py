"""Stopping autorecovery always ends its loops, also when a wake-up (an audit asked for, a mark appearing) comes
in the same instant as the stop: a cancellation that arrived together with the wake-up used to be lost, the
auditor loop ran on and ``stop()`` waited for it for ever."""

from __future__ import annotations

import asyncio

from bookie.client import BookKeeper, ClientConfig
from bookie.client.autorecovery import Autorecovery
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer


async def test_stop_ends_the_loops_when_a_wake_up_comes_with_it(zookeeper: ZooKeeperServer, ledgers_root: str,
                                                                 metadata_store: MetadataStore) -> None:
    async with BookKeeper(ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=ledgers_root)) as bk:
        for _ in range(5):
            ar = await Autorecovery(bk, "autorecovery-stop", check_interval_s=60).start()
            await asyncio.sleep(0.3)  # both loops have done their first step and wait for a wake-up
            ar.trigger_audit()
            async with asyncio.timeout(20):
                await ar.stop()
            assert await metadata_store.auditor_votes() == []  # stop() went on to withdraw its vote
