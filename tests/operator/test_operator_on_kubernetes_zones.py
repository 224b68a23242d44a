"""Zone awareness end to end on real bookies: four bookies on three nodes of three zones, the operator
publishes each bookie's rack (its node's region and zone) in ZooKeeper's /bookies in the format Pulsar's
BookieRackAffinityMapping reads, and a client whose placement reads that znode never puts two copies of an
entry in one zone while another zone has a writable bookie."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.racks import RACK_INFO_PATH
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import OperatorProcess, await_events, bookie_cluster, get_cluster, wait_ready
from tests.support.kube import ZONE_TOLERATION, KubeTarget, wait_for


async def test_bookies_racks_are_their_zones_and_ensembles_span_them(
        kube: KubeTarget, zone_nodes: dict[str, str], kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=4, ensembleSize=3,
                              nodeSelector={"localkube.io/emulated-by": "localkube"},
                              tolerations=[ZONE_TOLERATION]), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    pods = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in kube.pods(ns, "app.kubernetes.io/instance=bk")}
    assert set(pods.values()) == set(zone_nodes)          # every zone has a bookie
    expected = {name: f"/region-1/{zone_nodes[node]}" for name, node in pods.items()}

    def published() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        racks = {b["pod"]: b.get("rack") for b in obj["status"]["bookies"]}
        return obj if racks == expected else None

    wait_for(published, 60, interval=0.5, what="each bookie's rack in status")
    zones = {}
    async with MetadataStore(zookeeper.connect_string, root) as store:
        raw, _ = await store._get(RACK_INFO_PATH)
    group = json.loads(raw)[f"{ns}/bk"]
    for pod, rack in expected.items():
        bookie_id = f"{pod}.bk-headless.{ns}.svc.cluster.local:3181"
        assert group[bookie_id] == {"rack": rack, "hostname": bookie_id.rpartition(":")[0]}
        zones[bookie_id] = rack
    assert await_events(kube, ns, "bk", "RacksPublished")

    config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root, placement="rack",
                          rack_resolver="zookeeper")
    async with BookKeeper(config) as bk:
        for _ in range(100):
            if len(await bk.writable_bookies()) == 4:
                break
            await asyncio.sleep(0.2)
        for n in range(12):
            handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=2)
            await handle.add(f"entry of ledger {n}".encode())
            await handle.close()
            assert len({zones[b] for b in handle.ensemble}) == 3, handle.ensemble
