"""Filling one bookie's disk past the high-water mark makes the operator switch it to read-only within two
ticks (status and an Event say so); freeing the space makes it writable again. The disks are size-limited
filesystems (tmpfs) statically provisioned per bookie, so only that bookie's disk fills."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    INTERVAL,
    OperatorProcess,
    SmallVolumes,
    await_events,
    bookie_cluster,
    bookie_status,
    condition,
    get_cluster,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for

# A tick is INTERVAL seconds; the reconcile itself and the status write take a little more.
TWO_TICKS = 2 * INTERVAL + 2.0


async def bookie_read_only(kube: KubeTarget, ns: str, pod: str) -> bool:
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert obj is not None
    async with aiohttp.ClientSession() as http, \
            http.get(f"http://{obj['status']['podIP']}:8080/api/v1/bookie/state") as resp:
        return bool((await resp.json())["readOnly"])


async def test_a_full_disk_goes_read_only_within_two_ticks_and_comes_back_when_freed(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("bk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "bk", zookeeper.connect_string, root,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        diskPolicy={"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "bk")
    assert vols.used_fraction("ledgers-0-bk-1") < 0.3

    ballast = vols.fill("ledgers-0-bk-1", 0.6)
    filled = time.monotonic()

    def read_only_in_status() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        return obj if bookie_status(obj, 1)["state"] == "ReadOnly" else None

    obj = wait_for(read_only_in_status, 30, interval=0.2, what="bookie 1 read-only in status")
    reaction = time.monotonic() - filled
    assert reaction <= TWO_TICKS, f"read-only after {reaction:.1f}s, more than two ticks ({INTERVAL}s each)"
    b1 = bookie_status(obj, 1)
    assert b1["readOnlyReason"].startswith("operator: disk") and "high-water mark 50%" in b1["readOnlyReason"]
    assert b1["diskUsedFraction"] >= 0.5
    assert [bookie_status(obj, i)["state"] for i in (0, 2)] == ["Writable", "Writable"]
    assert obj["status"]["writableBookies"] == 2
    pressure = condition(obj, "DiskPressure")
    assert pressure is not None and pressure["status"] == "True" and "bk-1" in pressure["message"]
    assert await bookie_read_only(kube, ns, "bk-1")
    assert any("bk-1 set read-only" in e["message"] for e in await_events(kube, ns, "bk", "BookieReadOnly"))
    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert f"bk-1.bk-headless.{ns}.svc.cluster.local:3181" in await store.list_bookies(readonly=True)

    # It stays read-only tick after tick (the operator re-asserts it).
    await asyncio.sleep(3 * INTERVAL)
    assert await bookie_read_only(kube, ns, "bk-1")

    ballast.unlink()
    freed = time.monotonic()
    wait_for(lambda: bookie_status(get_cluster(kube, ns, "bk"), 1)["state"] == "Writable", 30, interval=0.2,
             what="bookie 1 writable again")
    assert time.monotonic() - freed <= TWO_TICKS
    assert not await bookie_read_only(kube, ns, "bk-1")
    assert await_events(kube, ns, "bk", "BookieWritable")
    obj = get_cluster(kube, ns, "bk")
    pressure = condition(obj, "DiskPressure")
    assert pressure is not None and pressure["status"] == "False"
    assert obj["status"]["writableBookies"] == 3


async def test_it_never_leaves_fewer_writable_bookies_than_the_ensemble_size(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("bk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "bk", zookeeper.connect_string, root, ensembleSize=2,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        diskPolicy={"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "bk")
    vols.fill("ledgers-0-bk-0", 0.7)
    vols.fill("ledgers-0-bk-2", 0.6)

    def pressure() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        c = condition(obj, "DiskPressure")
        return obj if c and c["reason"] == "TooFewWritableBookies" else None

    obj = wait_for(pressure, 30, interval=0.2, what="a DiskPressure condition")
    states = [bookie_status(obj, i)["state"] for i in range(3)]
    assert states == ["ReadOnly", "Writable", "Writable"]   # the fullest goes, the other is held writable
    c = condition(obj, "DiskPressure")
    assert c is not None and "bk-2 above the high-water mark kept writable" in c["message"]
    assert await_events(kube, ns, "bk", "DiskPressure")
