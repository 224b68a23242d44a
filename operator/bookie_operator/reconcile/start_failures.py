"""Bookies whose containers cannot start: one Warning Event per new reason, the Degraded reason naming them,
and, only with the explicit ``spec.storage.reclaimVolumesOfInstance`` opt-in, volumes of another BookKeeper
instance deleted so the bookie starts again empty."""

from __future__ import annotations

from bookie_operator import builders
from bookie_operator.decisions import start_failures
from bookie_operator.kube import KubeError
from bookie_operator.reconcile.context import Tick


async def reclaim_foreign_volumes(t: Tick) -> None:
    """Delete the claims, then the pod, of bookies on the opted-in instance's volumes."""
    for f in start_failures.to_reclaim(t.start_failures, t.spec):
        claims = builders.volume_claim_names(t.name, t.spec, f.ordinal, t.layout)
        try:
            for claim in claims:
                await t.op.kube.delete("PersistentVolumeClaim", t.namespace, claim)
            await t.op.kube.delete("Pod", t.namespace, f.pod)
        except KubeError as exc:
            t.wait(f"reclaiming the volumes of {f.pod}: {exc}")
            continue
        t.event("Warning", "VolumesReclaimed", f"{f.pod}: claims {', '.join(claims)} of BookKeeper instance "
                f"{t.spec.storage.reclaim_volumes_of_instance} deleted (spec.storage.reclaimVolumesOfInstance), "
                "the bookie starts again empty")


def report_start_failures(t: Tick) -> None:
    for f in start_failures.transitions(t.start_failures, t.previous.bookies):
        t.event("Warning", f.reason, start_failures.event_message(f))
    found = start_failures.degraded(t.start_failures, t.name, t.spec, t.status.instance_id, t.layout)
    if found is None:
        return
    t.problems.insert(0, found.message)
    t.failure_reason = found.reason
    t.wait(found.message)
