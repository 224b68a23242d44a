"""Rolling restarts (one outdated pod at a time, on a healthy cluster) and scale-up under disk pressure."""

from __future__ import annotations

from bookie_operator import decisions, metrics
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.observe import observe_under_replication


async def roll_outdated_pods(t: Tick) -> None:
    sts = t.statefulset
    if sts is None or t.status.decommission is not None:
        return
    revision = sts.get("status", {}).get("updateRevision")
    if revision is None or not any(b.exists and b.revision != revision for b in t.bookies):
        return
    t.under_replicated = await observe_under_replication(t)
    pod, waiting = decisions.pod_to_restart(t.bookies, revision, t.under_replicated, int(sts["spec"]["replicas"]))
    if waiting:
        t.wait(f"rolling restart: waiting for {waiting}")
    if pod is not None:
        await t.op.kube.delete("Pod", t.namespace, pod.pod)
        metrics.RESTARTS.inc()
        t.event("Normal", "RollingRestart", f"{pod.pod} restarted to apply revision {revision}")
        t.wait(f"rolling restart of {pod.pod}")


async def scale_up_for_disk_pressure(t: Tick) -> None:
    settled = (t.current_replicas == t.spec.replicas and all(b.ready for b in t.bookies)
               and t.status.decommission is None)
    target = decisions.scale_up_for_pressure(t.spec, t.plan, settled)
    if target is None:
        return
    await t.op.kube.patch_replicas(t.namespace, t.name, target)
    t.event("Normal", "ScaledUp", f"disk pressure: replicas {t.spec.replicas} -> {target} "
            f"(diskPolicy.scaleUp.maxReplicas {t.spec.disk_policy.scale_up.max_replicas})")
