"""Rolling restarts (one outdated pod at a time, on a healthy cluster) and scaling for disk pressure."""

from __future__ import annotations

from bookie_operator import decisions, metrics
from bookie_operator.decisions import retire
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.observe import observe_under_replication


async def roll_outdated_pods(t: Tick) -> None:
    sts = t.statefulset
    if sts is None or t.status.decommission is not None or t.status.implementation_switch is not None \
            or retire.in_progress(t.status.decommission_requests) is not None:
        return
    revision = sts.get("status", {}).get("updateRevision")
    if revision is None or not any(b.exists and b.revision != revision for b in t.bookies):
        return
    t.under_replicated = await observe_under_replication(t)
    pod, waiting = decisions.pod_to_restart(t.bookies, revision, t.under_replicated, int(sts["spec"]["replicas"]))
    if waiting:
        t.wait(f"rolling restart: waiting for {waiting}")
    if pod is not None and t.restart_hold:
        t.wait(f"rolling restart: waiting for {t.restart_hold}")
    elif pod is not None:
        await t.op.kube.delete("Pod", t.namespace, pod.pod)
        metrics.RESTARTS.inc()
        t.event("Normal", "RollingRestart", f"{pod.pod} restarted to apply revision {revision}")
        t.wait(f"rolling restart of {pod.pod}")


async def scale_for_disk_pressure(t: Tick) -> None:
    """One more bookie while pressure holds bookies writable; one fewer (decommissioned like any other) once
    the added ones are no longer needed. The count is ``status.scaledUpBy``: the spec is never written."""
    settled = (t.current_replicas == t.desired_replicas and all(b.ready for b in t.bookies)
               and t.status.decommission is None)
    by = t.status.scaled_up_by
    up = decisions.scale_up_for_pressure(t.spec, t.plan, settled, by)
    if up is not None:
        t.status.scaled_up_by = up
        t.event("Normal", "ScaledUp", f"disk pressure: replicas {t.spec.replicas + by} -> {t.spec.replicas + up} "
                f"(spec.replicas {t.spec.replicas} + {up} in status.scaledUpBy; "
                f"diskPolicy.scaleUp.maxReplicas {t.spec.disk_policy.scale_up.max_replicas})")
        return
    down = decisions.scale_back_after_pressure(t.spec, t.bookies, t.plan, settled, by)
    if down is not None:
        t.status.scaled_up_by = down
        t.event("Normal", "ScalingBack", f"disk pressure gone: replicas {t.spec.replicas + by} -> "
                f"{t.spec.replicas + down}, the added bookie is decommissioned first")
