"""Zone-aware placement on real bookies (Apache BookKeeper's and ours): with the racks Pulsar's
BookieRackAffinityMapping reads from the ``/bookies`` znode, every write quorum of a new ledger spans as many
zones as it can, and a zone's only bookie is never left out for a second copy in another zone. A change of the
znode reaches the client at its next refresh."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
from bookie.client import BookKeeper
from bookie.metadata.racks import RACK_INFO_PATH, BookieRack
from bookie.metadata.store import MetadataStore

from tests.support.java_bookies import BookieCluster


@pytest.fixture
async def publish(cluster: BookieCluster) -> AsyncIterator[MetadataStore]:
    """A metadata session whose group in ``/bookies`` is removed afterwards (the znode is shared)."""
    async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store:
        store.group = f"test-{uuid.uuid4().hex[:8]}"  # type: ignore[attr-defined]
        try:
            yield store
        finally:
            await store.update_rack_info(store.group, {}, remove=cluster.bookie_ids)  # type: ignore[attr-defined]


async def zones_of_new_ensembles(bk: BookKeeper, zones: dict[str, str], ledgers: int) -> list[list[str]]:
    out = []
    for n in range(ledgers):
        handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=2)
        await handle.add(f"ledger {n}".encode())
        await handle.close()
        out.append([zones[b] for b in handle.ensemble])
    return out


async def test_every_write_quorum_spans_the_zones(cluster: BookieCluster, publish: MetadataStore) -> None:
    ids = cluster.bookie_ids
    assert len(ids) == 4
    zones = dict(zip(ids, ["zone-a", "zone-b", "zone-c", "zone-a"], strict=True))
    group = publish.group  # type: ignore[attr-defined]
    await publish.update_rack_info(group, {b: BookieRack(f"/region-1/{z}") for b, z in zones.items()})
    raw, _ = await publish._get(RACK_INFO_PATH)
    assert json.loads(raw)[group][ids[1]] == {"rack": "/region-1/zone-b"}     # Pulsar's format

    config = cluster.client_config(placement="rack", rack_resolver="zookeeper", rack_refresh_s=0.0)
    async with BookKeeper(config) as bk:
        for placed in await zones_of_new_ensembles(bk, zones, 12):
            assert sorted(placed) == ["zone-a", "zone-b", "zone-c"], placed

        # zone-b's bookie moves to zone-a: three zones become two, and zone-c's only bookie is in every ledger.
        zones[ids[1]] = "zone-a"
        await publish.update_rack_info(group, {ids[1]: BookieRack("/region-1/zone-a")})
        for placed in await zones_of_new_ensembles(bk, zones, 12):
            assert placed.count("zone-c") == 1 and placed.count("zone-a") == 2, placed


async def test_without_rack_information_every_bookie_is_in_the_default_rack(cluster: BookieCluster) -> None:
    config = cluster.client_config(placement="rack", rack_resolver="zookeeper")
    async with BookKeeper(config) as bk:
        handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=2)
        await handle.add(b"placed anyway")
        await handle.close()
        assert len(set(handle.ensemble)) == 3
