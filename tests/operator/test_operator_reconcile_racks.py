"""Each bookie's rack from its node's zone (and region), published in ZooKeeper's /bookies under the
cluster's own group, in bookie status, and announced once; a bookie whose pod is away keeps its rack; a
cluster that opts out publishes nothing."""

from __future__ import annotations

from bookie_operator.decisions.racks import bookie_racks, rack_of_node

from tests.operator.fakes import NS, World, cluster_spec

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def test_a_rack_is_region_and_zone_or_zone_alone() -> None:
    assert rack_of_node({ZONE: "eu-1a", REGION: "eu-1"}) == "/eu-1/eu-1a"
    assert rack_of_node({ZONE: "zone-a"}) == "/zone-a"
    assert rack_of_node({REGION: "eu-1"}) is None and rack_of_node({}) is None


def test_a_bookie_away_keeps_its_rack_and_one_gone_loses_it() -> None:
    labels = {"n1": {ZONE: "a"}, "n2": {ZONE: "b"}}
    assert bookie_racks([0, 1, 2], {0: "n1", 1: "n2"}, labels, {2: "/c", 3: "/d"}) == {0: "/a", 1: "/b", 2: "/c"}


def place(w: World, nodes: dict[int, str], zones: dict[str, str]) -> None:
    for node, zone in zones.items():
        w.kube.objects[("Node", "", node)] = {"kind": "Node", "metadata": {
            "name": node, "labels": {ZONE: zone, REGION: "region-1"}}}
    for ordinal, node in nodes.items():
        w.kube.objects[("Pod", NS, f"bk-{ordinal}")]["spec"] = {"nodeName": node}


async def test_racks_are_published_from_the_nodes_zones() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    await w.tick()
    place(w, {0: "n-a", 1: "n-b", 2: "n-c"}, {"n-a": "zone-a", "n-b": "zone-b", "n-c": "zone-c"})
    await w.tick()
    published = w.zk.racks[f"{NS}/bk"]
    assert published == {w.bookie_id(i): (f"/region-1/zone-{z}", w.bookie_id(i).rpartition(":")[0])
                         for i, z in enumerate("abc")}
    assert [b["rack"] for b in w.status["bookies"]] == ["/region-1/zone-a", "/region-1/zone-b", "/region-1/zone-c"]
    assert w.kube.reasons("RacksPublished") == [
        f"/bookies group {NS}/bk: bk-0 /region-1/zone-a, bk-1 /region-1/zone-b, bk-2 /region-1/zone-c"]

    del w.kube.objects[("Pod", NS, "bk-1")]          # restarting: not scheduled yet
    await w.tick()
    assert w.zk.racks[f"{NS}/bk"][w.bookie_id(1)][0] == "/region-1/zone-b"
    assert len(w.kube.reasons("RacksPublished")) == 1


async def test_a_cluster_that_opts_out_publishes_nothing() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(publishRacks=False))
    await w.tick()
    await w.tick()
    place(w, {0: "n-a"}, {"n-a": "zone-a"})
    await w.tick()
    assert w.zk.racks == {} and not w.kube.reasons("RacksPublished")
