"""Forced decommission of a dead bookie, on our bookies: the middle one, bk-1 of three, is killed with its disk
(its claims deleted) while some single-replica ledgers lived only there. Naming it in spec.decommission lists
exactly those ledgers in status.dataLoss, with their Pulsar topic, and changes nothing while spec.acceptDataLoss
misses one of them; once it names them all, exactly those are given up (an EntriesGivenUp Event each, the loss
recorded in their metadata), the decommission completes with the ordinal re-created empty (the StatefulSet still
at three), and every other ledger is fully replicated off the dead bookie: no ledger references it, nothing is
under-replicated, and every entry of every other ledger reads back, through our client and Apache BookKeeper's
Java client alike (which finds the loss recorded and none of the given-up entries)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.data_loss import LOST_ENTRIES_KEY
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.java_reads import assert_java_reads_back
from tests.support.kube import KubeTarget, wait_for

ENTRIES = 10


async def write_ledgers(bk: BookKeeper, gone: str) -> tuple[dict[int, list[bytes]], set[int]]:
    """Single-replica ledgers until some are on ``gone`` and some elsewhere, then replicated ones (write
    quorum 2); returns every ledger's entries and the single-replica ledgers on ``gone``."""
    for _ in range(100):                      # Ready means registered; writable may follow a moment later
        if len(await bk.writable_bookies()) == 3:
            break
        await asyncio.sleep(0.2)
    written: dict[int, list[bytes]] = {}
    only_on_gone: set[int] = set()
    for n in itertools.count():
        assert n < 60, "placement never put single-replica ledgers both on and off the bookie to kill"
        if len(only_on_gone) >= 2 and len(written) > len(only_on_gone):
            break
        topic = {"pulsar/managed-ledger": f"public/default/persistent/single-{n}".encode()}
        handle = await bk.create_ledger(ensemble_size=1, write_quorum=1, ack_quorum=1, custom_metadata=topic)
        await fill(handle, written, f"single {n}")
        if handle.metadata.ensembles[0] == (gone,):
            only_on_gone.add(handle.ledger_id)
    for n in range(6):
        handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2)
        await fill(handle, written, f"replicated {n}")
    return written, only_on_gone


async def fill(handle: Any, written: dict[int, list[bytes]], name: str) -> None:
    written[handle.ledger_id] = [f"{name} entry {i}".encode() for i in range(ENTRIES)]
    for payload in written[handle.ledger_id]:
        await handle.add(payload)
    await handle.close()


def kill_with_its_disk(kube: KubeTarget, ns: str, pod: str) -> None:
    """Its claims deleted (held back by their protection while the pod uses them), then the pod: the
    StatefulSet's new pod gets empty volumes, whose missing cookie keeps the bookie from starting."""
    base = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
    claims = {c["metadata"]["name"]: c["metadata"]["uid"] for c in kube.api.request("GET", base)["items"]
              if c["metadata"]["name"].endswith(f"-{pod}")}
    assert claims, f"no claims of {pod}"
    for claim in claims:
        kube.api.request("DELETE", f"{base}/{claim}")
    kube.api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod}")

    def replaced() -> bool:
        now = {name: (kube.get(f"{base}/{name}") or {}).get("metadata", {}).get("uid") for name in claims}
        return all(now[name] != uid for name, uid in claims.items())

    wait_for(replaced, 90, interval=0.5, what=f"the claims of {pod} to be deleted")


async def test_a_dead_bookies_lost_ledgers_are_given_up_only_once_all_are_named(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=3), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    gone = f"bk-1.bk-headless.{ns}.svc.cluster.local:3181"
    config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)
    async with BookKeeper(config) as bk:
        written, lost = await write_ledgers(bk, gone)
        before = {lid: (await bk.ledger_metadata(lid)).value for lid in lost}
        replicated_on_gone = [lid for lid in written if lid not in lost
                              and gone in (await bk.ledger_metadata(lid)).value.bookies()]
    assert replicated_on_gone, "no replicated ledger on the bookie to kill"

    kill_with_its_disk(kube, ns, "bk-1")
    async with MetadataStore(zookeeper.connect_string, root) as store:
        async def unregistered() -> bool:
            return gone not in await store.list_bookies() and gone not in await store.list_bookies(readonly=True)
        for _ in range(300):
            if await unregistered():
                break
            await asyncio.sleep(0.2)
        assert await unregistered()

    patch_spec(kube, ns, "bk", {"decommission": ["bk-1"]})

    def loss(phase: str) -> dict[str, Any] | None:
        found = get_cluster(kube, ns, "bk")["status"].get("dataLoss")
        return found if found and found["phase"] == phase else None

    listed = wait_for(lambda: loss("AwaitingAcceptance"), 120, interval=0.5, what="the lost ledgers in status")
    assert {lg["ledgerId"] for lg in listed["ledgers"]} == lost and set(listed["notAccepted"]) == lost
    assert all(lg["topic"].startswith("persistent://public/default/single-")
               and lg["lostEntries"] == [f"0-{ENTRIES - 1}"] for lg in listed["ledgers"])
    await_events(kube, ns, "bk", "DataLossNotAccepted")

    short = sorted(lost)[1:]                     # one lost ledger left out: still refused, nothing changes
    patch_spec(kube, ns, "bk", {"acceptDataLoss": short})
    wait_for(lambda: (lg := loss("AwaitingAcceptance")) and lg["notAccepted"] == sorted(lost)[:1], 60,
             interval=0.5, what="the refusal naming the ledger left out")
    assert get_cluster(kube, ns, "bk")["status"]["decommissionRequests"][0]["phase"] in (
        "MarkingReadOnly", "Recovering", "AwaitingReplication")
    async with BookKeeper(config) as bk:
        assert {lid: (await bk.ledger_metadata(lid)).value for lid in lost} == before

    patch_spec(kube, ns, "bk", {"acceptDataLoss": sorted(lost)})
    wait_for(lambda: gone in get_cluster(kube, ns, "bk")["status"].get("decommissioned", []), 300, interval=1,
             what="the forced decommission of bk-1 to finish")
    assert (kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk") or {}).get("spec", {}).get("replicas") == 3
    given_up = get_cluster(kube, ns, "bk")["status"]["dataLoss"]
    assert given_up["phase"] == "GivenUp" and {lg["ledgerId"] for lg in given_up["ledgers"]} == lost
    assert len(await_events(kube, ns, "bk", "EntriesGivenUp", at_least=len(lost))) == len(lost)

    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert await store.list_underreplicated() == []
        assert gone in await store.list_bookies()           # the new, empty bookie under the same id
    async with BookKeeper(config) as bk:
        for lid, payloads in written.items():
            md = (await bk.ledger_metadata(lid)).value
            assert all(gone not in e for e in md.ensembles.values()), f"ledger {lid} still references {gone}"
            if lid in lost:
                assert md.custom_metadata[LOST_ENTRIES_KEY] == f"{gone}:0-{ENTRIES - 1}".encode()
                continue
            reader = await bk.open_ledger(lid)
            assert [e.payload for e in await reader.read(0, ENTRIES - 1)] == payloads, f"ledger {lid}"
        # Apache BookKeeper's own client reads the repaired metadata the same: the loss recorded, the holes empty.
        seen = await assert_java_reads_back(bk, written, gone, given_up=frozenset(lost))
        for lid in lost:
            assert seen[lid].custom_metadata[LOST_ENTRIES_KEY] == f"{gone}:0-{ENTRIES - 1}".encode()
