"""Grow the bookies' claims to the spec's storage sizes, online, and follow each one to completion.

The plan per claim is ``decisions.expansion``; this step reads the claims (and, for a claim to grow, its
StorageClass), patches the requests, and keeps ``status.volumeExpansion`` (one entry per claim, with its
phase in the resize protocol) and a ``VolumeExpansion`` condition; an Event marks each claim's change of
phase. The claims themselves are the truth, so a restarted operator carries on where they are.
"""

from __future__ import annotations

from bookie_operator import builders, decisions
from bookie_operator.decisions.expansion import ClaimAction, ClaimPlan, ExpansionPhase, ObservedClaim, quantity_bytes
from bookie_operator.kube import KubeError
from bookie_operator.models import ClaimExpansionStatus, VolumeExpansionStatus
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.ports import Obj

RESIZE_ERRORS = ("ControllerResizeError", "NodeResizeError")

# phase -> (Event type, reason) announced when a claim reaches it
_EVENTS: dict[ExpansionPhase, tuple[str, str]] = {
    ExpansionPhase.REQUESTED: ("Normal", "VolumeExpansionRequested"),
    ExpansionPhase.FILE_SYSTEM_RESIZE_PENDING: ("Normal", "FileSystemResizePending"),
    ExpansionPhase.EXPANDED: ("Normal", "VolumeExpanded"),
    ExpansionPhase.FAILED: ("Warning", "VolumeExpansionFailed"),
    ExpansionPhase.NOT_EXPANDABLE: ("Warning", "VolumeExpansionNotAllowed"),
}


async def expand_volumes(t: Tick) -> None:
    claims = await _observe_claims(t)
    if not claims:
        return
    plans = decisions.plan_expansion(claims)
    run = t.status.volume_expansion
    sizes = (t.spec.storage.journal.size, t.spec.storage.ledgers.size)
    if run is None or (run.journal_size, run.ledgers_size) != sizes:
        if all(p.phase is ExpansionPhase.EXPANDED for p in plans):
            return        # nothing to grow (a new cluster, or sizes lowered back to what the claims have)
        run = VolumeExpansionStatus(journal_size=sizes[0], ledgers_size=sizes[1], started_at=decisions.iso(t.now))
        t.event("Normal", "VolumeExpansionStarted", f"growing the bookies' claims: journal {sizes[0]}, "
                f"ledgers {sizes[1]}")
    previous = {c.claim: c for c in run.claims}
    entries = []
    for plan in plans:
        plan = await _act(t, plan)
        entries.append(_record(t, plan, previous.get(plan.claim)))
    run.claims = entries
    done = all(e.phase == "Expanded" for e in entries)
    if done and run.completed_at is None:
        run.completed_at = decisions.iso(t.now)
        t.event("Normal", "VolumesExpanded", f"all {len(entries)} claims at journal {sizes[0]}, ledgers {sizes[1]}")
    elif not done:
        run.completed_at = None
    t.status.volume_expansion = run
    _condition(t, entries)


async def _observe_claims(t: Tick) -> list[tuple[ObservedClaim, str]]:
    """The Bound claims of the bookies, each with the size its kind of volume should have."""
    pvcs = {p["metadata"]["name"]: p for p in await t.op.kube.list("PersistentVolumeClaim", t.namespace,
                                                                     builders.label_selector(t.name))}
    classes: dict[str, bool | None] = {}
    out = []
    for bookie in decisions.sort_by_ordinal(t.bookies):
        for name in builders.volume_claim_names(t.name, t.spec, bookie.ordinal, t.layout):
            pvc = pvcs.get(name)
            if pvc is None or (pvc.get("status") or {}).get("phase") != "Bound":
                continue
            target = (t.spec.storage.journal if name.startswith("journal") else t.spec.storage.ledgers).size
            request = pvc["spec"].get("resources", {}).get("requests", {}).get("storage", "0")
            sc = pvc["spec"].get("storageClassName")
            allows: bool | None = True
            if (quantity_bytes(request) or 0) < (quantity_bytes(target) or 0):   # only then does the class matter
                key = sc or ""
                if key not in classes:
                    classes[key] = await _allows_expansion(t, sc)
                allows = classes[key]
            out.append((_observed(pvc, bookie.ordinal, request, allows), target))
    return out


async def _allows_expansion(t: Tick, storage_class: str | None) -> bool | None:
    if not storage_class:
        return None
    obj = await t.op.kube.get("StorageClass", "", storage_class)
    return None if obj is None else bool(obj.get("allowVolumeExpansion"))


def _observed(pvc: Obj, ordinal: int, request: str, allows: bool | None) -> ObservedClaim:
    status = pvc.get("status") or {}
    errors = tuple(f"{c['type']}: {c.get('message', '')}".rstrip(": ") for c in status.get("conditions") or []
                   if c.get("type") in RESIZE_ERRORS and c.get("status") == "True")
    return ObservedClaim(
        name=pvc["metadata"]["name"], ordinal=ordinal, request=request,
        capacity=(status.get("capacity") or {}).get("storage"), storage_class=pvc["spec"].get("storageClassName"),
        class_allows_expansion=allows,
        resize_status=(status.get("allocatedResourceStatuses") or {}).get("storage"), errors=errors)


async def _act(t: Tick, plan: ClaimPlan) -> ClaimPlan:
    match plan.action:
        case ClaimAction.NONE:
            return plan
        case ClaimAction.REFUSED:
            t.problems.append(plan.message)
            return plan
        case ClaimAction.PATCH:
            try:
                await t.op.kube.apply({
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": plan.claim, "namespace": t.namespace},
                    "spec": {"resources": {"requests": {"storage": plan.target}}}})
            except KubeError as exc:     # the API server's resize admission, for one
                message = f"claim {plan.claim}: {exc}"
                t.problems.append(message)
                return ClaimPlan(plan.claim, plan.ordinal, plan.target, plan.action, ExpansionPhase.FAILED, message)
            t.wait(f"claim {plan.claim} growing to {plan.target}")
            return plan


def _record(t: Tick, plan: ClaimPlan, before: ClaimExpansionStatus | None) -> ClaimExpansionStatus:
    phase = plan.phase.value
    changed = before is None or before.phase != phase or before.target != plan.target
    if changed and plan.phase in _EVENTS and not (before is None and plan.phase is ExpansionPhase.EXPANDED):
        type_, reason = _EVENTS[plan.phase]
        pod = builders.pod_name(t.name, plan.ordinal)
        t.event(type_, reason, f"{pod}: claim {plan.claim}: {plan.message}" if plan.message
                else f"{pod}: claim {plan.claim}")
    return ClaimExpansionStatus(claim=plan.claim, ordinal=plan.ordinal, target=plan.target,
                                phase=phase,  # type: ignore[arg-type]
                                message=plan.message, since=before.since if before and not changed
                                else decisions.iso(t.now))


def _condition(t: Tick, entries: list[ClaimExpansionStatus]) -> None:
    expanded = sum(1 for e in entries if e.phase == "Expanded")
    blocked = [e for e in entries if e.phase in ("Failed", "NotExpandable")]
    if blocked:
        t.condition("VolumeExpansion", False, blocked[0].phase, "; ".join(e.message for e in blocked))
    elif expanded == len(entries):
        t.condition("VolumeExpansion", False, "Expanded", f"{expanded} claims at their size")
    else:
        busy = [f"{e.claim} {e.phase}" for e in entries if e.phase != "Expanded"]
        t.condition("VolumeExpansion", True, "Expanding", f"{expanded}/{len(entries)} claims expanded; "
                    + ", ".join(busy))
        t.wait(f"volume expansion: {expanded}/{len(entries)} claims expanded")
