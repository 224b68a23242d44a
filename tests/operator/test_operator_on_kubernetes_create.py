"""kubectl apply of a 3-bookie BookieCluster: 3 ready bookies registered in ZooKeeper, a Ready condition, the
objects the operator owns, and a Python client writing and reading through the bookies."""

from __future__ import annotations

from collections.abc import Callable

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import OperatorProcess, await_events, bookie_cluster, condition, events, wait_ready
from tests.support.kube import KubeTarget


async def test_three_bookies_become_ready_registered_and_serve_a_client(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root), namespace=ns)

    obj = wait_ready(kube, ns, "bk")
    status = obj["status"]
    assert (status["replicas"], status["readyReplicas"], status["writableBookies"]) == (3, 3, 3)
    ready = condition(obj, "Ready")
    assert ready is not None and ready["reason"] == "BookiesReady"
    ids = [b["bookieId"] for b in status["bookies"]]
    assert ids == [f"bk-{i}.bk-headless.{ns}.svc.cluster.local:3181" for i in range(3)]
    assert status["instanceId"]

    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert sorted(await store.list_bookies()) == ids

    async with BookKeeper(ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)) as bk:
        handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2)
        for i in range(20):
            await handle.add(f"entry-{i}".encode())
        await handle.close()
        reader = await bk.open_ledger(handle.ledger_id)
        entries = await reader.read(0, 19)
        assert [e.payload for e in entries] == [f"entry-{i}".encode() for i in range(20)]

    # What it made: owned objects, volumes that are not owned, Events.
    sts = kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk")
    assert sts is not None and sts["metadata"]["ownerReferences"][0]["kind"] == "BookieCluster"
    for svc in ("bk", "bk-headless"):
        assert kube.get(f"/api/v1/namespaces/{ns}/services/{svc}") is not None
    assert kube.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/bk") is not None
    pvcs = kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    assert len(pvcs) == 6 and all(not p["metadata"].get("ownerReferences") for p in pvcs)
    assert await_events(kube, ns, "bk", "Created") and events(kube, ns, "bk", "MetadataInitialized")
    managers = {m["manager"] for m in sts["metadata"]["managedFields"]}
    assert "bookie-operator" in managers
