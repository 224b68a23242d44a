"""Safe scale-down, on our bookies and on Apache BookKeeper's: 4 -> 3 decommissions the highest ordinal
(read-only, re-replication through the bookies' own autorecovery, nothing left referencing it, cookie
deleted, StatefulSet shrunk, volumes deleted), loses no entry and leaves no under-replicated ledger; an
operator killed in the middle resumes from the state kept in status; scaling back up starts a fresh bookie
without cookie errors. With the Retain policy, the ordinal comes back on its old volumes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    IMPLEMENTATIONS,
    OperatorProcess,
    await_events,
    bookie_cluster,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.ledgers_written import write_ledgers
from tests.support.kube import KubeTarget, wait_for


@pytest.mark.parametrize("implementation", list(IMPLEMENTATIONS))
async def test_scale_down_with_an_operator_restart_loses_nothing_and_scale_up_works(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess], implementation: str) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    op = operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=4,
                              **IMPLEMENTATIONS[implementation]), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    gone = f"bk-3.bk-headless.{ns}.svc.cluster.local:3181"

    # Data on every bookie, including the one that will be removed.
    config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)
    written = await write_ledgers(config, 4, gone, ledgers=8, entries=25)

    patch_spec(kube, ns, "bk", {"replicas": 3})

    def decommissioning() -> dict[str, Any] | None:
        return get_cluster(kube, ns, "bk")["status"].get("decommission")

    started = wait_for(decommissioning, 30, interval=0.1, what="a decommission in status")
    assert started["ordinal"] == 3 and started["bookieId"] == gone
    # Events are posted just after the status that records them: an operator killed in between never posts
    # that one (announced at most once), so the kill waits for the announcement.
    await_events(kube, ns, "bk", "DecommissionStarted", at_least=1)
    op.kill()                                     # the operator dies in the middle of the decommission
    kept = get_cluster(kube, ns, "bk")["status"]["decommission"]
    assert kept["startedAt"] == started["startedAt"]
    sts = kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk")
    assert sts is not None and (sts["spec"]["replicas"] == 4 or kept["phase"] in ("ScalingDown",
                                                                                  "ApplyingPvcPolicy"))
    await asyncio.sleep(3)
    op.start()                                    # ... and resumes it from status after the restart

    def finished() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        return obj if gone in obj["status"].get("decommissioned", []) and not obj["status"].get("decommission") \
            else None

    obj = wait_for(finished, 240, interval=0.5, what="the decommission of bk-3 to finish")
    assert obj["status"]["replicas"] == 3
    phases = [e["message"] for e in events(kube, ns, "bk", "Decommissioning")]
    assert any("-> DeletingCookie" in m for m in phases) and any("-> ScalingDown" in m for m in phases)
    assert len(await_events(kube, ns, "bk", "DecommissionStarted", at_least=1)) == 1   # resumed, not restarted
    assert kube.get(f"/api/v1/namespaces/{ns}/pods/bk-3") is None
    claims = kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    assert not [c for c in claims if c["metadata"]["name"].endswith("-bk-3")]
    wait_ready(kube, ns, "bk")

    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert await store.list_underreplicated() == []
        assert await store.read_cookie(gone) is None
    async with BookKeeper(config) as bk:
        for lid, payloads in written.items():
            md = (await bk.ledger_metadata(lid)).value
            assert all(gone not in e for e in md.ensembles.values()), f"ledger {lid} still references {gone}"
            reader = await bk.open_ledger(lid)
            assert [e.payload for e in await reader.read(0, len(payloads) - 1)] == payloads

    # Back to 4: a fresh bk-3 (new volumes, no stale cookie) starts cleanly.
    patch_spec(kube, ns, "bk", {"replicas": 4})
    obj = wait_ready(kube, ns, "bk", timeout=240)
    assert obj["status"]["readyReplicas"] == 4
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-3")
    assert pod is not None and pod["status"]["containerStatuses"][0]["restartCount"] == 0
    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert gone in await store.list_bookies()
        assert await store.read_cookie(gone) is not None


@pytest.mark.parametrize("implementation", list(IMPLEMENTATIONS))
def test_with_the_retain_policy_the_ordinal_comes_back_on_its_old_volumes_without_cookie_errors(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess], implementation: str) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=3, **IMPLEMENTATIONS[implementation],
                              scaleDown={"pvcPolicy": "Retain"}), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    gone = f"bk-2.bk-headless.{ns}.svc.cluster.local:3181"
    claims_before = {c["metadata"]["name"]: c["metadata"]["uid"] for c in
                     kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]}

    patch_spec(kube, ns, "bk", {"replicas": 2, "ensembleSize": 2})
    wait_for(lambda: gone in get_cluster(kube, ns, "bk")["status"].get("decommissioned", []), 180,
             interval=0.5, what="bk-2 decommissioned")
    claims = {c["metadata"]["name"]: c["metadata"]["uid"] for c in
              kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]}
    assert claims == claims_before                       # the volumes of bk-2 are kept

    patch_spec(kube, ns, "bk", {"replicas": 3})
    obj = wait_ready(kube, ns, "bk", timeout=240)
    assert obj["status"]["readyReplicas"] == 3
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-2")
    assert pod is not None and pod["status"]["containerStatuses"][0]["restartCount"] == 0
    claims_after = {c["metadata"]["name"]: c["metadata"]["uid"] for c in
                    kube.api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]}
    assert claims_after == claims_before                 # same volumes, same identity, same cookie
