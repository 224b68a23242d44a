"""Two operator replicas, one active (a Lease): the leader is killed (SIGKILL, no goodbye) in the middle of a
decommission; the standby takes the lease over once it has expired, and finishes the decommission from the
state kept in status, without starting it again or repeating a step."""

from __future__ import annotations

import time
from collections import Counter
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

LEASE_S = 6


def holder(kube: KubeTarget, ns: str) -> str:
    lease = kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/bookie-operator")
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def test_the_standby_takes_over_and_finishes_the_decommission_without_repeating_a_step(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[..., OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    args = ["--leader-election-namespace", ns, "--lease-duration", str(LEASE_S)]
    replicas = {name: operator_factory(ns, replica=name, extra_args=args) for name in ("op-a", "op-b")}
    leader_name = wait_for(lambda: holder(kube, ns).split("_")[0] or None, 60, what="a leader")
    leader, standby = replicas[leader_name], next(op for n, op in replicas.items() if n != leader_name)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=4), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    assert "acquired the lease" not in standby.log          # the standby did nothing so far

    patch_spec(kube, ns, "bk", {"replicas": 3})

    def decommissioning() -> dict[str, Any] | None:
        return get_cluster(kube, ns, "bk")["status"].get("decommission")

    wait_for(decommissioning, 60, interval=0.1, what="a decommission in status")
    # Events are posted just after the status that records them; a leader killed in between never posts that
    # one (announced at most once), so the kill waits for the announcement.
    await_events(kube, ns, "bk", "DecommissionStarted", at_least=1)
    leader.kill()
    killed = time.monotonic()
    new = wait_for(lambda: holder(kube, ns) if holder(kube, ns).startswith(standby.hostname or "?") else None,
                   120, interval=0.1, what="the standby holding the lease")
    took_over = time.monotonic() - killed
    print(f"\n[leader kill] lease taken over after {took_over:.1f}s by {new} (lease duration {LEASE_S}s)")

    gone = f"bk-3.bk-headless.{ns}.svc.cluster.local:3181"

    def finished() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        status = obj["status"]
        return obj if gone in status.get("decommissioned", []) and not status.get("decommission") else None

    obj = wait_for(finished, 240, interval=0.5, what="the decommission of bk-3 finished by the standby")
    assert obj["status"]["replicas"] == 3
    transitions = Counter(e["message"] for e in events(kube, ns, "bk", "Decommissioning"))
    assert transitions and max(transitions.values()) == 1, transitions     # no step announced twice
    assert any("-> ScalingDown" in m for m in transitions)
    assert len(await_events(kube, ns, "bk", "DecommissionStarted", at_least=1)) == 1         # resumed, not restarted
    assert len(await_events(kube, ns, "bk", "Decommissioned", at_least=1)) == 1
    assert "acquired the lease" in standby.log
