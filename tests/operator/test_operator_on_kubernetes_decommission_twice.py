"""Two scale-downs in a row: the first decommission completes and leaves no trace in status, the second one
starts from scratch (its own phases, not the first one's leftovers), and each is announced once."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for


def test_a_second_decommission_follows_a_finished_one(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=4), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)

    def decommissioned(bookie_id: str) -> Callable[[], dict[str, Any] | None]:
        def check() -> dict[str, Any] | None:
            status = get_cluster(kube, ns, "bk")["status"]
            return status if bookie_id in status.get("decommissioned", []) and "decommission" not in status \
                else None
        return check

    for ordinal in (3, 2):
        bookie_id = f"bk-{ordinal}.bk-headless.{ns}.svc.cluster.local:3181"
        patch_spec(kube, ns, "bk", {"replicas": ordinal})
        status = wait_for(decommissioned(bookie_id), 240, interval=0.5, what=f"bk-{ordinal} decommissioned")
        assert status["replicas"] == ordinal
        wait_ready(kube, ns, "bk", timeout=120)

    status = get_cluster(kube, ns, "bk")["status"]
    assert "decommission" not in status
    await_events(kube, ns, "bk", "Decommissioned", at_least=2)
    assert status["decommissioned"][-2:] == [f"bk-{o}.bk-headless.{ns}.svc.cluster.local:3181" for o in (3, 2)]
    for reason, per_bookie in (("DecommissionStarted", 1), ("Decommissioned", 1)):
        counts = collections.Counter(e["message"].split(" ")[1 if reason == "DecommissionStarted" else 0]
                                     for e in events(kube, ns, "bk", reason))
        assert counts == {"bk-3": per_bookie, "bk-2": per_bookie}, (reason, counts)
    transitions = [e["message"] for e in events(kube, ns, "bk", "Decommissioning")]
    repeated = [m for m, n in collections.Counter(transitions).items() if n > 1]
    assert not repeated, f"phase transitions announced more than once: {repeated}"
    assert any(m.startswith("bk-2: ") for m in transitions) and any(m.startswith("bk-3: ") for m in transitions)
