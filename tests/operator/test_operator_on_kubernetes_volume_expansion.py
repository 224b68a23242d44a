"""A larger spec.storage.ledgers.size on a running cluster grows every bookie's ledger claim online, under a
write load that loses no add: the operator patches each claim (the StatefulSet, whose claim templates cannot
change, is re-created with orphan propagation, keeping its pods), the local cluster's resizer and kubelet
grow the XFS volume under the running bookie, and a bookie the operator had made read-only because its disk
was full is writable again, without a restart. Status and Events follow each claim; a StorageClass that
does not allow expansion is reported instead of patched."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    bookie_status,
    condition,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for

Obj = dict[str, Any]
MiB = 2**20


def claim(kube: KubeTarget, ns: str, name: str) -> Obj:
    pvc = kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")
    assert pvc is not None
    return pvc


def volume_directory(kube: KubeTarget, ns: str, name: str) -> Path:
    pv = kube.get(f"/api/v1/persistentvolumes/{claim(kube, ns, name)['spec']['volumeName']}")
    assert pv is not None
    return Path(pv["spec"]["hostPath"]["path"])


def fill(directory: Path, fraction: float) -> None:
    """Allocate real blocks until ``fraction`` of the filesystem is used."""
    st = os.statvfs(directory)
    size = int(st.f_blocks * st.f_frsize * fraction) - (st.f_blocks - st.f_bavail) * st.f_frsize
    fd = os.open(directory / "ballast", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


async def write_until(stop: asyncio.Event, bk: BookKeeper, counts: dict[str, int]) -> None:
    """Ledgers of 20 entries, one after the other, until ``stop``; every add must succeed."""
    while not stop.is_set():
        handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2)
        for i in range(20):
            await handle.add(f"entry {i}".encode() * 50)
            counts["adds"] += 1
        await handle.close()
        counts["ledgers"] += 1


async def test_growing_the_ledger_size_expands_every_claim_online_under_load(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "bk", zookeeper.connect_string, root, ensembleSize=2,
        storage={"ledgers": {"size": "300Mi", "storageClassName": "standard-xfs"}},
        diskPolicy={"readOnlyHighWaterMark": 0.8, "writableLowWaterMark": 0.6, "forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    pods = {p["metadata"]["name"]: p["metadata"]["uid"] for p in kube.pods(ns, "app.kubernetes.io/instance=bk")}
    claims = [f"ledgers-0-bk-{i}" for i in range(3)]
    assert [claim(kube, ns, c)["status"]["capacity"]["storage"] for c in claims] == ["300Mi"] * 3

    fill(volume_directory(kube, ns, "ledgers-0-bk-0"), 0.9)
    wait_for(lambda: bookie_status(get_cluster(kube, ns, "bk"), 0)["state"] == "ReadOnly", 60,
             what="bookie 0 read-only for its full disk")

    counts = {"adds": 0, "ledgers": 0}
    stop = asyncio.Event()
    async with BookKeeper(ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)) as bk:
        writer = asyncio.create_task(write_until(stop, bk, counts))
        try:
            patch_spec(kube, ns, "bk", {"storage": {"ledgers": {"size": "600Mi"}}})

            def expanded() -> Obj | None:
                obj = get_cluster(kube, ns, "bk")
                run = obj["status"].get("volumeExpansion") or {}
                return obj if run.get("ledgersSize") == "600Mi" and run.get("completedAt") else None

            obj = await asyncio.to_thread(wait_for, expanded, 180, 0.5, "the volume expansion completed")
            await asyncio.to_thread(
                wait_for, lambda: bookie_status(get_cluster(kube, ns, "bk"), 0)["state"] == "Writable", 60, 0.5,
                "bookie 0 writable again")
            before = counts["adds"]
            await asyncio.to_thread(wait_for, lambda: counts["adds"] > before + 40, 60, 0.5, "more adds")
        finally:
            stop.set()
            await writer            # raises if any add failed
    assert counts["ledgers"] > 0

    run = obj["status"]["volumeExpansion"]
    ledger_claims = {c["claim"]: c for c in run["claims"] if c["claim"].startswith("ledgers")}
    assert sorted(ledger_claims) == claims
    assert all(c["phase"] == "Expanded" and c["target"] == "600Mi" for c in ledger_claims.values())
    for name in claims:
        pvc = claim(kube, ns, name)
        assert pvc["spec"]["resources"]["requests"]["storage"] == "600Mi"
        assert pvc["status"]["capacity"]["storage"] == "600Mi"
    st = os.statvfs(volume_directory(kube, ns, "ledgers-0-bk-0"))
    assert st.f_blocks * st.f_frsize > 500 * MiB
    cond = condition(obj, "VolumeExpansion")
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "Expanded"
    # Online: the same pods, never restarted.
    now = {p["metadata"]["name"]: p for p in kube.pods(ns, "app.kubernetes.io/instance=bk")}
    assert {n: p["metadata"]["uid"] for n, p in now.items()} == pods
    assert all(cs["restartCount"] == 0 for p in now.values() for cs in p["status"]["containerStatuses"])
    # New bookies get the new size: the StatefulSet's claim template says so.
    sts = kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk")
    assert sts is not None
    templates = {t["metadata"]["name"]: t["spec"]["resources"]["requests"]["storage"]
                 for t in sts["spec"]["volumeClaimTemplates"]}
    assert templates["ledgers-0"] == "600Mi"
    assert await_events(kube, ns, "bk", "VolumeExpansionStarted")
    assert len(await_events(kube, ns, "bk", "VolumeExpanded", at_least=3)) >= 3
    assert await_events(kube, ns, "bk", "VolumesExpanded")


def test_a_storage_class_without_expansion_is_reported_not_patched(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, ensembleSize=2,
                              storage={"ledgers": {"size": "1Gi", "storageClassName": "standard"}}), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    patch_spec(kube, ns, "bk", {"storage": {"ledgers": {"size": "2Gi"}}})

    def refused() -> Obj | None:
        obj = get_cluster(kube, ns, "bk")
        c = condition(obj, "VolumeExpansion")
        return obj if c and c["reason"] == "NotExpandable" else None

    obj = wait_for(refused, 60, interval=0.5, what="the VolumeExpansion condition NotExpandable")
    message = condition(obj, "VolumeExpansion")["message"]  # type: ignore[index]
    assert "StorageClass standard does not allow volume expansion" in message and "ledgers-0-bk-0" in message
    degraded = condition(obj, "Degraded")
    assert degraded is not None and degraded["status"] == "True" and "standard" in degraded["message"]
    assert all(c["phase"] == "NotExpandable" for c in obj["status"]["volumeExpansion"]["claims"]
               if c["claim"].startswith("ledgers"))
    assert claim(kube, ns, "ledgers-0-bk-0")["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert await_events(kube, ns, "bk", "VolumeExpansionNotAllowed", at_least=3)
