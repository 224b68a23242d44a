"""The same operator drives Apache BookKeeper's Java bookies (the Java bookie image,
bookie-fleet/apache-bookkeeper: Apache BookKeeper 4.18.0): read-only control from disk usage. (Scheduled
compaction and scale-down run on both implementations in their own files.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    JAVA,
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


def test_java_bookie_with_a_full_disk_goes_read_only_and_back(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("jbk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "jbk", zookeeper.connect_string, root, **JAVA,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        diskPolicy={"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "jbk", timeout=240)
    ballast = vols.fill("ledgers-0-jbk-2", 0.6)

    def state(want: str) -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "jbk")
        return obj if bookie_status(obj, 2)["state"] == want else None

    obj = wait_for(lambda: state("ReadOnly"), 30, interval=0.2, what="Java bookie 2 read-only")
    assert bookie_status(obj, 2)["readOnlyReason"].startswith("operator: disk")
    pressure = condition(obj, "DiskPressure")
    assert pressure is not None and pressure["status"] == "True"
    assert await_events(kube, ns, "jbk", "BookieReadOnly")
    ballast.unlink()
    wait_for(lambda: state("Writable"), 30, interval=0.2, what="Java bookie 2 writable again")
    assert await_events(kube, ns, "jbk", "BookieWritable")
