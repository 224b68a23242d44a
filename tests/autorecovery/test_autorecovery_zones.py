"""Autorecovery with the racks of /bookies: the copy that replaces a lost bookie goes to a bookie of the lost
one's zone when there is one, never next to a copy in another ledger's zone, so every ledger still spans the
three zones afterwards (a random choice would put two copies in one zone about half the time)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bookie.client import BookKeeper
from bookie.client.autorecovery import Autorecovery
from bookie.metadata.racks import BookieRack

from tests.support.java_bookies import BookieCluster

BOUND_S = 60.0


async def test_re_replication_keeps_every_ledger_across_the_zones(cluster_factory: Callable[..., BookieCluster],
                                                                  bookie_kind: str) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 5)
    ids = cluster.bookie_ids
    zones = dict(zip(ids, ["zone-a", "zone-b", "zone-c", "zone-a", "zone-b"], strict=True))
    config = cluster.client_config(placement="rack", rack_resolver="zookeeper", rack_refresh_s=0.0,
                                   add_timeout_s=3.0)
    async with BookKeeper(config) as bk:
        await bk.store.update_rack_info("autorecovery-test", {b: BookieRack(f"/{z}") for b, z in zones.items()})
        victim = ids[1]
        ledgers: list[int] = []
        while len(ledgers) < 6:
            lh = await bk.create_ledger(3, 3, 2)
            for i in range(20):
                await lh.add(b"entry-%d" % i)
            await lh.close()
            assert sorted(zones[b] for b in lh.ensemble) == ["zone-a", "zone-b", "zone-c"]
            if victim in lh.ensemble:
                ledgers.append(lh.ledger_id)
        await asyncio.to_thread(cluster.by_id(victim).kill)

        ar = await Autorecovery(bk, "autorecovery-zones", check_interval_s=0.5).start()
        started = time.monotonic()
        try:
            while time.monotonic() - started < BOUND_S:
                mds = [(await bk.ledger_metadata(i)).value for i in ledgers]
                if all(victim not in md.bookies() for md in mds) and not await bk.store.list_underreplicated():
                    break
                await asyncio.sleep(0.5)
        finally:
            await ar.stop()
            await bk.store.update_rack_info("autorecovery-test", {}, remove=ids)
        for ledger_id in ledgers:
            md = (await bk.ledger_metadata(ledger_id)).value
            last = md.ensembles[max(md.ensembles)]
            assert victim not in last
            assert sorted(zones[b] for b in last) == ["zone-a", "zone-b", "zone-c"], last
            reader = await bk.open_ledger(ledger_id)
            assert len(await reader.read(0, 19)) == 20
