"""When a full bookie cannot go read-only without leaving fewer writable bookies than the ensemble size, and
the spec allows it, the operator adds a bookie; once it is up, the full one goes read-only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    SmallVolumes,
    bookie_cluster,
    bookie_status,
    events,
    get_cluster,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for


def test_disk_pressure_scales_up_then_the_full_bookie_goes_read_only(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("bk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "bk", zookeeper.connect_string, root, replicas=2, ensembleSize=2,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        diskPolicy={"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95,
                    "scaleUp": {"enabled": True, "maxReplicas": 3}}), namespace=ns)
    wait_ready(kube, ns, "bk")
    vols.fill("ledgers-0-bk-0", 0.6)

    def scaled() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        return obj if obj["spec"]["replicas"] == 3 else None

    wait_for(scaled, 60, interval=0.5, what="spec.replicas raised to 3")
    assert any("replicas 2 -> 3" in e["message"] for e in events(kube, ns, "bk", "ScaledUp"))

    def relieved() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        if len(obj["status"].get("bookies", [])) == 3 and bookie_status(obj, 0)["state"] == "ReadOnly":
            return obj
        return None

    obj = wait_for(relieved, 120, interval=0.5, what="bk-0 read-only once bk-2 is up")
    assert [bookie_status(obj, i)["state"] for i in (1, 2)] == ["Writable", "Writable"]
    assert obj["spec"]["replicas"] == 3              # and no further: maxReplicas
