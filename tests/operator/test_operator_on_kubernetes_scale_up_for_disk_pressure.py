"""When a full bookie cannot go read-only without leaving fewer writable bookies than the ensemble size, and
the spec allows it, the operator adds a bookie; once it is up, the full one goes read-only.

The added bookie is counted in ``status.scaledUpBy``, never written into ``spec.replicas``: a GitOps controller
that keeps re-applying the original manifest (client-side like Argo CD, server-side like Flux) during and after
the scale-up changes nothing, and the StatefulSet never flaps back."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import yaml
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    SmallVolumes,
    await_events,
    bookie_cluster,
    bookie_status,
    events,
    get_cluster,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for


class GitOps:
    """Re-applies one manifest as Argo CD (``kubectl apply``) and Flux (server-side apply, its own field
    manager) do on every sync, and records the StatefulSet's replicas seen between syncs."""

    def __init__(self, kube: KubeTarget, namespace: str, manifest: dict[str, Any]) -> None:
        self.kube, self.namespace, self.manifest = kube, namespace, manifest
        self.replicas_seen: list[int] = []
        self.syncs = 0

    def sync(self) -> None:
        self.syncs += 1
        if self.syncs % 2:
            self.kube.apply(copy.deepcopy(self.manifest), namespace=self.namespace)
        else:
            self.kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager",
                              "kustomize-controller", "-n", self.namespace, "-f", "-",
                              input=yaml.safe_dump(self.manifest))
        sts = self.kube.get(f"/apis/apps/v1/namespaces/{self.namespace}/statefulsets/bk")
        if sts is not None:
            self.replicas_seen.append(int(sts["spec"]["replicas"]))


def test_disk_pressure_scales_up_in_status_and_a_gitops_reapply_never_undoes_it(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("bk", 3, 256)
    operator_factory(ns)
    manifest = bookie_cluster(
        "bk", zookeeper.connect_string, root, replicas=2, ensembleSize=2,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        diskPolicy={"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95,
                    "scaleUp": {"enabled": True, "maxReplicas": 3}})
    gitops = GitOps(kube, ns, manifest)
    gitops.sync()
    wait_ready(kube, ns, "bk")
    vols.fill("ledgers-0-bk-0", 0.6)

    def relieved() -> dict[str, Any] | None:
        gitops.sync()                       # during the scale-up
        obj = get_cluster(kube, ns, "bk")
        bookies = obj.get("status", {}).get("bookies", [])
        if len(bookies) == 3 and bookie_status(obj, 0)["state"] == "ReadOnly":
            return obj
        return None

    obj = wait_for(relieved, 180, interval=1.0, what="bk-2 added and bk-0 read-only")
    assert obj["status"]["scaledUpBy"] == 1 and obj["spec"]["replicas"] == 2
    assert [bookie_status(obj, i)["state"] for i in (1, 2)] == ["Writable", "Writable"]
    assert any("replicas 2 -> 3" in e["message"] for e in await_events(kube, ns, "bk", "ScaledUp"))

    deadline = time.monotonic() + 20        # after the scale-up: several operator ticks (2 s interval)
    while time.monotonic() < deadline:
        gitops.sync()
        time.sleep(1.0)
    obj = get_cluster(kube, ns, "bk")
    assert obj["spec"]["replicas"] == 2 and obj["status"]["scaledUpBy"] == 1
    assert 3 in gitops.replicas_seen and gitops.replicas_seen[gitops.replicas_seen.index(3):] == \
        [3] * (len(gitops.replicas_seen) - gitops.replicas_seen.index(3)), gitops.replicas_seen
    assert not events(kube, ns, "bk", "DecommissionStarted")
    assert len(await_events(kube, ns, "bk", "ScaledUp", at_least=1)) == 1        # and no further: maxReplicas
    table = kube.kubectl("-n", ns, "get", "bkc", "bk").stdout.splitlines()
    assert "SCALED-UP" in table[0].split() and table[1].split()[table[0].split().index("SCALED-UP")] == "1"
