"""Apply the desired ConfigMap, Services, PDB, NetworkPolicy and StatefulSet (server-side apply), skipping what
already holds; delete the objects the spec turned off.

The StatefulSet (read this tick anyway) is compared every tick; the other objects are read
again only when their desired content changed or every ``DRIFT_CHECK_S``, which halves the API requests of
an idle cluster while still undoing manual edits.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bookie_operator import builders, decisions, metrics
from bookie_operator.kube import KubeError
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.implementation_switch import during_switch
from bookie_operator.reconcile.ports import Obj

DRIFT_CHECK_S = 300.0


def contains(live: Any, desired: Any) -> bool:
    """Does ``live`` already hold every field of ``desired`` (the API server adds defaults)?"""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(contains(live.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(live) == len(desired) and all(
            contains(a, b) for a, b in zip(live, desired, strict=True))
    return bool(live == desired or (desired == {} and live is None))


async def apply_desired(t: Tick) -> None:
    t.replicas = decisions.statefulset_replicas(t.desired_replicas, t.current_replicas, t.status.decommission)
    objs = builders.desired_objects(t.owner, t.spec, t.replicas, t.op.operator_peers, t.layout)
    for obj in during_switch(t, objs):
        await apply_one(t, obj)
    for kind, name in builders.unwanted_objects(t.owner, t.spec):
        await _delete_own(t, kind, name)


async def _delete_own(t: Tick, kind: str, name: str) -> None:
    """Delete an object the spec turned off, if it is this cluster's (never one somebody else made)."""
    key = (t.uid, kind, name)
    mono = t.op.monotonic()
    seen = t.op.checked.get(key)
    if seen is not None and seen[0] == "absent" and mono - seen[1] < DRIFT_CHECK_S:
        return
    live = await t.op.kube.get(kind, t.namespace, name)
    owners = (live or {}).get("metadata", {}).get("ownerReferences") or []
    if live is not None and any(o.get("uid") == t.uid for o in owners):
        try:
            await t.op.kube.delete(kind, t.namespace, name)
        except KubeError as exc:
            t.problems.append(f"delete {kind}/{name}: {exc}")
            t.event("Warning", "DeleteFailed", f"{kind}/{name}: {exc}")
            return
        t.event("Normal", "Deleted", f"{kind}/{name} deleted (turned off in the spec)")
    t.op.checked[key] = ("absent", mono)


async def apply_one(t: Tick, obj: Obj) -> None:
    """Server-side apply of one object, skipped when the live one already holds every desired field."""
    kind, name = obj["kind"], obj["metadata"]["name"]
    key = (t.uid, kind, name)
    digest = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
    mono = t.op.monotonic()
    if kind == "StatefulSet":
        live = t.statefulset
        if live is not None and not _owned(live, t.uid):
            # Somebody else's StatefulSet of this name (a Helm release's): never changed or replaced, it holds
            # their bookies' disks and ids; spec.adopt takes it over with the checks that keeps them.
            t.problems.append(f"StatefulSet {name} exists and is not this cluster's: name it in spec.adopt to take "
                              "it over (docs/operator.md, Bringing an existing fleet)")
            return
    else:
        seen = t.op.checked.get(key)
        if seen is not None and seen[0] == digest and mono - seen[1] < DRIFT_CHECK_S:
            metrics.APPLIES.labels(kind, "unchanged").inc()
            return
        live = await t.op.kube.get(kind, t.namespace, name)
    if live is not None and contains(live, obj):
        t.op.checked[key] = (digest, mono)
        metrics.APPLIES.labels(kind, "unchanged").inc()
        return
    t.op.checked.pop(key, None)
    try:
        await t.op.kube.apply(obj)
    except KubeError as exc:
        metrics.APPLIES.labels(kind, "error").inc()
        if kind == "StatefulSet" and exc.status == 422 and live is not None:
            await _recreate_statefulset(t, name, exc)
            return
        t.problems.append(f"apply {kind}/{name}: {exc}")
        t.event("Warning", "ApplyFailed", f"{kind}/{name}: {exc}")
        return
    metrics.APPLIES.labels(kind, "applied").inc()
    verb = "created" if live is None else "updated"
    t.event("Normal", verb.capitalize(), f"{kind}/{name} {verb} (server-side apply)")


def _owned(obj: Obj, uid: str) -> bool:
    return any(o.get("uid") == uid for o in obj["metadata"].get("ownerReferences") or [])


async def _recreate_statefulset(t: Tick, name: str, exc: KubeError) -> None:
    """An immutable field changed (volumeClaimTemplates, selector...): delete the StatefulSet without touching
    its pods or volumes; the next tick applies the new one, which adopts them."""
    await t.op.kube.delete("StatefulSet", t.namespace, name, propagation="Orphan")
    t.event("Normal", "StatefulSetRecreated", f"{name}: immutable fields changed ({exc}); "
            "deleted with orphan propagation, pods and volumes kept")
    t.wait("StatefulSet re-creation")
