"""Scale-down: start or advance the decommission state machine kept in ``status.decommission``.

The decision (``decisions.decommission_step``) is pure; this step gathers its facts, performs the actions it
returns (each idempotent, so a restart in any phase repeats at most one) and announces phase transitions.
"""

from __future__ import annotations

from typing import assert_never

from bookie_operator import builders, decisions, metrics
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.decisions import DecommissionAction, DecommissionFacts, iso, parse_time, retire
from bookie_operator.kube import KubeError
from bookie_operator.models import DecommissionStatus
from bookie_operator.reconcile.context import Tick
from bookie_operator.zk import MetadataError


async def decommission(t: Tick) -> None:
    state = t.status.decommission or _start(t)
    if state is None:
        return
    facts = await _facts(t, state)
    step = decisions.decommission_step(state, facts, t.spec, t.now, t.desired_replicas)
    new_state = step.status
    for action in step.actions:
        try:
            new_state = await _perform(t, action, state, new_state)
        except (BookieApiError, MetadataError, KubeError) as exc:
            if new_state is not None:
                new_state = new_state.model_copy(update={"message": f"{action}: {exc}"})
            t.wait(f"decommission {state.pod}: {action}: {exc}")
            if action is DecommissionAction.REQUEST_RECOVERY:
                t.problems.append(f"decommission of {state.pod} cannot request re-replication: {exc}")
    if new_state is not None and new_state.phase != state.phase:
        metrics.DECOMMISSION_STEPS.labels(new_state.phase).inc()
        t.event("Normal", "Decommissioning", f"{state.pod}: {state.phase} -> {new_state.phase}")
    if step.waiting:
        t.wait(f"decommission {state.pod}: waiting for {step.waiting}")
        if new_state is not None and new_state.phase == "AwaitingReplication":
            waited = (t.now - (parse_time(new_state.phase_since) or t.now)).total_seconds()
            if waited > t.spec.scale_down.recovery_timeout_seconds:
                t.problems.append(f"decommission of {state.pod} stalled: {step.waiting}")
    if step.finished:
        t.status.decommissioned = [*t.status.decommissioned, state.bookie_id][-20:]
        t.event("Normal", "Decommissioned", f"{state.pod} ({state.bookie_id}) decommissioned")
    if step.cancelled:
        t.event("Normal", "DecommissionCancelled", f"{state.pod}: replicas raised to {t.desired_replicas}")
    t.status.decommission = new_state


def _start(t: Tick) -> DecommissionStatus | None:
    """A new decommission when the cluster should have fewer bookies than the StatefulSet has."""
    if t.current_replicas is None or retire.in_progress(t.status.decommission_requests) is not None:
        return None     # a chosen bookie's decommission (spec.decommission) goes first
    ordinal = decisions.ordinal_to_decommission(t.current_replicas, t.desired_replicas)
    if ordinal is None:
        return None
    pod = builders.pod_name(t.name, ordinal)
    bookie_id = t.bookie_id(ordinal)
    state = decisions.start_decommission(ordinal, pod, bookie_id, t.now)
    t.event("Normal", "DecommissionStarted", f"decommissioning {pod} ({bookie_id}): replicas "
            f"{t.current_replicas} -> {t.desired_replicas}")
    return state


async def _facts(t: Tick, state: DecommissionStatus) -> DecommissionFacts:
    """Only what the current phase needs (ZooKeeper scans and PVC lists are not free)."""
    bookie = next((b for b in t.bookies if b.ordinal == state.ordinal), None)
    ledgers: int | None = None
    under_replicated: int | None = None
    cookie: bool | None = None
    claims = 0
    try:
        if state.phase in ("Recovering", "AwaitingReplication"):
            metadata = await t.cluster_metadata()
            ledgers = await metadata.ledgers_referencing(state.bookie_id)
            under_replicated = await metadata.under_replicated()
        elif state.phase in ("DeletingCookie", "ApplyingPvcPolicy"):
            cookie = await (await t.cluster_metadata()).cookie_exists(state.bookie_id)
    except MetadataError as exc:
        t.wait(f"ZooKeeper: {exc}")
    if state.phase == "ApplyingPvcPolicy":
        names = set(builders.volume_claim_names(t.name, t.spec, state.ordinal, t.layout))
        pvcs = await t.op.kube.list("PersistentVolumeClaim", t.namespace)
        claims = sum(1 for p in pvcs if p["metadata"]["name"] in names)
    return DecommissionFacts(
        read_only=bookie.read_only if bookie else None, ledgers_referencing=ledgers,
        under_replicated=under_replicated, cookie_exists=cookie, pod_exists=bool(bookie and bookie.exists),
        claims_remaining=claims)


async def request_recovery(t: Tick, ordinal: int, bookie_id: str) -> None:
    """Asks a surviving bookie's autorecovery to re-replicate every ledger of the leaving bookie."""
    survivors = [t.admins[b.ordinal] for b in t.bookies
                 if b.ordinal != ordinal and b.reachable and b.ordinal in t.admins]
    if not survivors:
        raise BookieApiError("no reachable bookie to run the recovery")
    await survivors[0].recover_bookie([bookie_id])
    t.event("Normal", "RecoveryRequested", f"re-replication of {bookie_id} requested")


async def _perform(t: Tick, action: DecommissionAction, state: DecommissionStatus,
                   new_state: DecommissionStatus | None) -> DecommissionStatus | None:
    """Carry out one action; returns the (possibly updated) new state."""
    admin = t.admins.get(state.ordinal)
    match action:
        case DecommissionAction.SET_READ_ONLY | DecommissionAction.SET_WRITABLE:
            if admin is not None:   # unreachable: the decision moves on after its grace period
                await admin.set_read_only(action is DecommissionAction.SET_READ_ONLY)
        case DecommissionAction.REQUEST_RECOVERY:
            await request_recovery(t, state.ordinal, state.bookie_id)
            if new_state is not None:
                return new_state.model_copy(update={"recovery_requested_at": iso(t.now)})
        case DecommissionAction.DELETE_COOKIE:
            await (await t.cluster_metadata()).delete_cookie(state.bookie_id)
            t.event("Normal", "CookieDeleted", f"cookie of {state.bookie_id} deleted")
        case DecommissionAction.SHRINK:
            pass    # the apply step writes the StatefulSet's replicas from the same state (statefulset_replicas)
        case DecommissionAction.DELETE_CLAIMS:
            for claim in builders.volume_claim_names(t.name, t.spec, state.ordinal, t.layout):
                await t.op.kube.delete("PersistentVolumeClaim", t.namespace, claim)
            t.event("Normal", "VolumesDeleted", f"volumes of {state.pod} deleted (pvcPolicy Delete)")
        case _:
            assert_never(action)
    return new_state
