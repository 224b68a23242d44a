"""spec.decommission: decommission the chosen bookies one at a time, kept in ``status.decommissionRequests``.

The decisions (``decisions.retire``) are pure; this step resolves the entries, checks the gate, gathers the
facts the phase in progress needs, performs the actions it returns (each idempotent, so a restart in any phase
repeats at most one) and announces every change of phase with an Event.
"""

from __future__ import annotations

from typing import assert_never

from bookie_operator import builders, metrics
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.decisions import iso, parse_time, retire, start_failures
from bookie_operator.decisions.retire import Gate, RetireAction, RetireFacts
from bookie_operator.kube import KubeError
from bookie_operator.models import DecommissionRequestStatus
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.decommission import request_recovery
from bookie_operator.zk import MetadataError


async def decommission_chosen(t: Tick) -> None:
    previous = t.status.decommission_requests
    if not t.spec.decommission and not previous:
        return
    replicas = t.current_replicas if t.current_replicas is not None else t.spec.replicas
    sts = builders.statefulset_name(t.name)
    resolved = {e: retire.resolve_entry(e, sts, replicas, t.bookie_id) for e in t.spec.decommission}
    refusals = {o: retire.refusal(o, replicas, t.spec) for o in resolved.values() if isinstance(o, int)}
    gate = await _gate(t, previous, resolved)
    plan = retire.plan_requests(t.spec.decommission, previous, resolved, refusals, gate, t.now)
    requests = plan.requests
    if plan.start is not None:
        requests = [await _started(t, r) if r is plan.start else r for r in requests]
    for gone in plan.cancelled:
        await _cancel(t, gone)
    before = {r.entry: r for r in previous}
    for r in requests:
        _announce(t, before.get(r.entry), r)
    requests = [await _advance(t, r) if r.phase in retire.ACTIVE else r for r in requests]
    # A request finished after its entry left the spec leaves no record: nothing would ever clear it.
    t.status.decommission_requests = [r for r in requests if r.phase != "Done" or r.entry in t.spec.decommission]


async def _gate(t: Tick, previous: list[DecommissionRequestStatus], resolved: dict[str, int | str]) -> Gate:
    """What a start waits for; ZooKeeper is asked only when a request could start.

    A bookie named in spec.decommission holds no start by being down: a dead one (its disk lost) is the one
    a user names, and its own under-replication marks are what its decommission clears."""
    done = {r.entry for r in previous if r.phase in (*retire.ACTIVE, "Done")}
    if retire.in_progress(previous) is not None or not set(t.spec.decommission) - done:
        return Gate(busy=None, under_replicated=0, not_ready=[])
    busy = None
    if t.status.decommission is not None:
        busy = f"the scale-down decommission of {t.status.decommission.pod}"
    elif t.status.implementation_switch is not None:
        busy = "the implementation switch"
    elif t.current_replicas != t.desired_replicas:
        busy = f"the scaling of the StatefulSet to {t.desired_replicas} bookies"
    elif t.status.rebalance is not None and t.status.rebalance.moves:
        busy = f"the rebalance's {len(t.status.rebalance.moves)} replica move(s) in flight"
    named = {o for o in resolved.values() if isinstance(o, int)}
    under: int | None = None
    try:
        metadata = await t.cluster_metadata()
        dead = {t.bookie_id(o) for o in named} - await metadata.registered_bookies()
        under = await metadata.under_replicated(excluding=dead)
    except MetadataError as exc:
        t.wait(f"ZooKeeper: {exc}")
    return Gate(busy=busy, under_replicated=under,
                not_ready=[b.pod for b in t.bookies
                           if b.ordinal not in named and not (b.exists and b.ready and b.reachable)])


async def _started(t: Tick, r: DecommissionRequestStatus) -> DecommissionRequestStatus:
    """The names of the bookie and the uid of its pod: only that pod and its volumes are ever deleted."""
    assert r.ordinal is not None
    pod = builders.pod_name(t.name, r.ordinal)
    live = await t.op.kube.get("Pod", t.namespace, pod)
    uid = (live or {}).get("metadata", {}).get("uid")
    if not uid:
        return r.model_copy(update={"phase": "Held", "message": f"waiting for pod {pod} to exist",
                                    "started_at": None})
    return r.model_copy(update={"pod": pod, "bookie_id": t.bookie_id(r.ordinal), "old_pod_uid": uid})


async def _cancel(t: Tick, r: DecommissionRequestStatus) -> None:
    admin = t.admins.get(r.ordinal) if r.ordinal is not None else None
    try:
        if admin is not None:
            await admin.set_read_only(False)
    except BookieApiError as exc:
        t.wait(f"decommission of {r.pod} cancelled, cannot make it writable again: {exc}")
    t.event("Normal", "DecommissionCancelled", f"{r.pod}: {r.entry!r} removed from spec.decommission in "
            f"phase {r.phase}; the bookie takes writes again")


def _announce(t: Tick, old: DecommissionRequestStatus | None, new: DecommissionRequestStatus) -> None:
    """One Event for each change of a request's phase or reason (none when a tick finds it unchanged)."""
    if old is not None and old.phase == new.phase and old.message == new.message:
        return
    if new.phase == "Refused":
        t.event("Warning", "DecommissionRefused", f"spec.decommission {new.entry!r}: {new.message}")
    elif new.phase == "Held":
        t.event("Normal", "DecommissionHeld", f"spec.decommission {new.entry!r}: {new.message}")
    elif new.phase == "MarkingReadOnly" and (old is None or old.phase not in retire.ACTIVE):
        t.event("Normal", "DecommissionStarted", f"decommissioning {new.pod} ({new.bookie_id}): re-replicated, "
                "then re-created empty")


async def _advance(t: Tick, state: DecommissionRequestStatus) -> DecommissionRequestStatus:
    facts = await _facts(t, state)
    step = retire.retire_step(state, facts, t.spec, t.now)
    new = step.status
    for action in step.actions:
        try:
            new = await _perform(t, action, state, new)
        except (BookieApiError, MetadataError, KubeError) as exc:
            new = new.model_copy(update={"message": f"{action}: {exc}"})
            t.wait(f"decommission {state.pod}: {action}: {exc}")
            if action is RetireAction.REQUEST_RECOVERY:
                t.problems.append(f"decommission of {state.pod} cannot request re-replication: {exc}")
            break
    if new.phase != state.phase:
        metrics.DECOMMISSION_STEPS.labels(new.phase).inc()
        t.event("Normal", "Decommissioning", f"{state.pod}: {state.phase} -> {new.phase}")
    if new.phase == "Done":
        t.status.decommissioned = [*t.status.decommissioned, state.bookie_id or ""][-20:]
        t.event("Normal", "Decommissioned", f"{state.pod} ({state.bookie_id}) decommissioned: its ledgers are on "
                "other bookies and the ordinal runs an empty bookie")
    elif step.waiting:
        t.wait(f"decommission {state.pod}: waiting for {step.waiting}")
        waited = (t.now - (parse_time(new.phase_since) or t.now)).total_seconds()
        if new.phase == "AwaitingReplication" and waited > t.spec.scale_down.recovery_timeout_seconds:
            t.problems.append(f"decommission of {state.pod} stalled: {step.waiting}")   # Degraded says so
    return new


async def _facts(t: Tick, state: DecommissionRequestStatus) -> RetireFacts:
    """Only what the phase needs (ZooKeeper scans are not free)."""
    assert state.ordinal is not None and state.bookie_id is not None
    bookie = next((b for b in t.bookies if b.ordinal == state.ordinal), None)
    facts: dict[str, object] = {"read_only": bookie.read_only if bookie else None}
    try:
        metadata = await t.cluster_metadata()
        if state.phase in ("Recovering", "AwaitingReplication"):
            facts["ledgers_referencing"] = await metadata.ledgers_referencing(state.bookie_id)
            facts["under_replicated"] = await metadata.under_replicated()
        if state.phase in ("DeletingCookie", "AwaitingNewBookie"):
            facts["cookie_exists"] = await metadata.cookie_exists(state.bookie_id)
        if state.phase == "AwaitingNewBookie":
            facts["new_bookie_ready"] = bool(
                bookie and bookie.exists and bookie.ready and bookie.read_only is False
                and state.bookie_id in await metadata.registered_bookies())
    except MetadataError as exc:
        t.wait(f"ZooKeeper: {exc}")
    if state.phase in ("RecreatingBookie", "AwaitingNewBookie"):
        live = await t.op.kube.get("Pod", t.namespace, state.pod or "")
        facts["pod_uid"] = (live or {}).get("metadata", {}).get("uid")
        if state.phase == "AwaitingNewBookie" and facts["pod_uid"] == state.old_pod_uid:
            facts["new_bookie_ready"] = False          # the old pod, still terminating
        elif state.phase == "AwaitingNewBookie" and live is not None:
            facts["new_bookie_blocked_by_cookie"] = start_failures.blocked_by_cookie(live, state.ordinal)
    return RetireFacts(**facts)  # type: ignore[arg-type]


async def _perform(t: Tick, action: RetireAction, state: DecommissionRequestStatus,
                   new: DecommissionRequestStatus) -> DecommissionRequestStatus:
    """Carry out one action; returns the (possibly updated) new state."""
    assert state.ordinal is not None and state.bookie_id is not None and state.pod is not None
    match action:
        case RetireAction.SET_READ_ONLY | RetireAction.SET_WRITABLE:
            admin = t.admins.get(state.ordinal)
            if admin is not None:   # unreachable: the decision moves on after its grace period
                await admin.set_read_only(action is RetireAction.SET_READ_ONLY)
        case RetireAction.REQUEST_RECOVERY:
            await request_recovery(t, state.ordinal, state.bookie_id)
            return new.model_copy(update={"recovery_requested_at": iso(t.now)})
        case RetireAction.DELETE_COOKIE:
            await (await t.cluster_metadata()).delete_cookie(state.bookie_id)
            t.event("Normal", "CookieDeleted", f"cookie of {state.bookie_id} deleted")
        case RetireAction.DELETE_CLAIMS:
            # Deleted first: the claims stay (Terminating) until the pod releases them, and the StatefulSet
            # creates the new pod only once they are gone, so it never starts on the old disks.
            for claim in builders.volume_claim_names(t.name, t.spec, state.ordinal, t.layout):
                await t.op.kube.delete("PersistentVolumeClaim", t.namespace, claim)
        case RetireAction.DELETE_POD:
            if await t.op.kube.delete("Pod", t.namespace, state.pod) and not _terminating(t, state.ordinal):
                    t.event("Normal", "BookieRecreated", f"{state.pod} and its volumes deleted: the StatefulSet "
                        "re-creates it empty")
        case _:
            assert_never(action)
    return new


def _terminating(t: Tick, ordinal: int) -> bool:
    return any(b.terminating for b in t.bookies if b.ordinal == ordinal)
