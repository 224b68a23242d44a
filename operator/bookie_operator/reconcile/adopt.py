"""Taking over a running bookie StatefulSet (spec.adopt), as the resumable state machine in status.adoption:

- AwaitingApproval: the StatefulSet read, the take-over checked, the diff of what approving changes recorded; the
  tick ends here, so nothing is applied, restarted or replaced (a Refused one names why, and waits the same way);
- Replacing (spec.adopt.approve): each pod labelled with the operator's selector, then the StatefulSet deleted with
  its pods orphaned; once it is gone, the operator's StatefulSet of the same name (built with the adopted claim
  templates, directories and Service: ``Layout``) is applied by the usual steps and takes the pods over;
- Rolling: the usual rolling restart (one pod at a time, every bookie ready, nothing under-replicated) brings the
  pods onto the operator's template; Adopted once they all are.

Each phase is re-derived from what is there, so an operator restarted in any of them continues.
"""

from __future__ import annotations

from bookie_operator import builders
from bookie_operator.decisions import ConditionValue, reconciling_conditions, stalled_conditions
from bookie_operator.decisions import adopt as plan
from bookie_operator.decisions.adopt import Refusal
from bookie_operator.decisions.observed import iso
from bookie_operator.models import AdoptionFound, AdoptionPhase, AdoptionStatus
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.ports import Obj

CONDITION = "Adopting"


async def adopt(t: Tick) -> bool:
    """Whether the rest of the tick may run: not before the take-over is approved and the StatefulSet replaced."""
    state = t.status.adoption
    if state is None and t.spec.adopt is None:
        return True
    if state is None or state.phase in ("Refused", "AwaitingApproval"):
        if t.spec.adopt is None:            # the request withdrawn before anything changed
            t.status.adoption = None
            t.condition(CONDITION, False, "NotRequested", "spec.adopt removed before approval")
            return True
        return await _check(t)
    if state.phase == "Replacing":
        return await _replace(t, state)
    if state.phase == "Rolling":
        await _follow_roll(t, state)
    return True


def _is_ours(t: Tick, obj: Obj | None) -> bool | None:
    if obj is None:
        return None
    return any(o.get("uid") == t.uid and o.get("controller") for o in obj["metadata"].get("ownerReferences") or [])


def _move(t: Tick, phase: AdoptionPhase, message: str, found: AdoptionFound | None = None, diff: str = "") -> None:
    previous = t.status.adoption
    if previous is not None and previous.phase == phase:
        previous.message, previous.diff = message, diff or previous.diff
        if found is not None:
            previous.found = found
        return
    t.status.adoption = AdoptionStatus(phase=phase, since=iso(t.now), message=message,
                                       found=found or (previous.found if previous else None),
                                       diff=diff or (previous.diff if previous else ""))


async def _check(t: Tick) -> bool:
    assert t.spec.adopt is not None
    name = t.spec.adopt.stateful_set_name
    sts = await t.op.kube.get("StatefulSet", t.namespace, name)
    if _is_ours(t, sts):
        _refuse(t, Refusal("AdoptionStateLost", f"StatefulSet {name} is already this cluster's but status.adoption "
                           "does not say how it was adopted; remove spec.adopt"))
        return False
    configmaps = {}
    for cm in plan.configmap_names(sts or {}):
        obj = await t.op.kube.get("ConfigMap", t.namespace, cm)
        configmaps[cm] = {str(k): str(v) for k, v in (obj or {}).get("data", {}).items()} if obj else None
    found = plan.read_statefulset(t.name, t.namespace, t.spec, sts, configmaps)
    if isinstance(found, Refusal):
        _refuse(t, found)
        return False
    assert sts is not None
    lay = builders.layout(t.name, t.spec, found)
    desired = builders.statefulset(t.owner, t.spec, found.replicas, lay)
    diff = plan.diff(name, sts["spec"]["template"], desired["spec"]["template"], found.config,
                     builders.bookie_config(t.spec, lay))
    previous = t.status.adoption
    phase = plan.next_phase(previous.phase if previous else None, t.spec.adopt.approve, False, False, False)
    kept = (f"{found.replicas} bookies ({found.bookie_id}, ...), claims "
            f"{', '.join(v.claim for v in (*found.journals, *found.ledgers))}, Service {found.service_name}")
    if previous is None or previous.phase != "AwaitingApproval" or previous.diff != diff:
        t.event("Normal", "AdoptionPlanned", f"StatefulSet {name}: {kept} kept; approving (spec.adopt.approve) "
                "replaces it and restarts each pod onto the operator's template and configuration, "
                f"{plan.summary(diff)} of diff: kubectl get bkc {t.name} -o jsonpath='{{.status.adoption.diff}}'")
    _move(t, "AwaitingApproval", f"{kept} kept; status.adoption.diff is what approving changes", found, diff)
    t.condition(CONDITION, True, "AwaitingApproval", f"StatefulSet {name}: set spec.adopt.approve to take it over")
    t.condition("Ready", False, "AdoptionPending", f"StatefulSet {name} is not the operator's yet")
    t.condition("Degraded", False, "AdoptionPending", "")
    if phase != "Replacing":
        t.status.observed_generation = t.generation     # this spec is seen: it waits for approval (or a fix)
        # Not done until approved, nor failed: kstatus's InProgress, as Argo CD's Suspended.
        _kstatus(t, reconciling_conditions("AwaitingApproval", f"StatefulSet {name}: set spec.adopt.approve to "
                                           "take it over"))
        return False
    t.event("Normal", "AdoptionApproved", f"StatefulSet {name}: replacing it with the operator's, pods orphaned "
            "(not restarted), then one pod at a time")
    # Recorded before acting: an operator that dies before this status is written has changed nothing yet.
    _move(t, "Replacing", "the StatefulSet is deleted with its pods orphaned")
    _kstatus(t, reconciling_conditions("Replacing", f"StatefulSet {name}: deleted with its pods orphaned"))
    t.wait(f"adoption of StatefulSet {name} approved")
    return False


def _refuse(t: Tick, refusal: Refusal) -> None:
    previous = t.status.adoption
    if previous is None or previous.phase != "Refused" or previous.message != refusal.message:
        t.event("Warning", refusal.reason, refusal.message)
    _move(t, "Refused", refusal.message)
    if t.status.adoption is not None:
        t.status.adoption.found, t.status.adoption.diff = None, ""
    t.condition(CONDITION, False, refusal.reason, refusal.message)
    t.condition("Ready", False, refusal.reason, refusal.message)
    t.condition("Degraded", True, refusal.reason, refusal.message)
    _kstatus(t, stalled_conditions(refusal.reason, refusal.message))   # kstatus's Failed: only the user can fix it
    t.status.observed_generation = t.generation


def _kstatus(t: Tick, values: list[ConditionValue]) -> None:
    """Reconciling and Stalled while the tick stops before the status step that otherwise writes them."""
    for c in values:
        t.condition(c.type, c.status, c.reason, c.message)


async def _replace(t: Tick, state: AdoptionStatus) -> bool:
    """Label the pods (so that the operator's selector finds them), delete the StatefulSet orphaning them; True
    once it is gone and the operator's may be applied."""
    assert state.found is not None
    name = state.found.stateful_set_name
    sts = await t.op.kube.get("StatefulSet", t.namespace, name)
    if plan.next_phase("Replacing", True, False, _is_ours(t, sts), False) == "Replacing":
        assert sts is not None
        await _label_pods(t, sts)
        if not sts["metadata"].get("deletionTimestamp"):
            await t.op.kube.delete("StatefulSet", t.namespace, name, propagation="Orphan")
            t.event("Normal", "AdoptionReplacing", f"StatefulSet {name} deleted with orphan propagation: its pods "
                    "and claims are kept, the operator's StatefulSet takes them over")
        t.condition(CONDITION, True, "Replacing", state.message)
        _kstatus(t, reconciling_conditions("Replacing", f"StatefulSet {name}: {state.message}"))
        t.wait(f"adoption: StatefulSet {name} deleted with its pods orphaned")
        return False
    await _take_over_service(t, state.found.service_name)
    _move(t, "Rolling", "the operator's StatefulSet; pods restart onto its template one at a time")
    t.event("Normal", "AdoptionRolling", f"StatefulSet {name} is the operator's; pods restart one at a time, each "
            "when every bookie is ready and no ledger is under-replicated")
    t.condition(CONDITION, True, "Rolling", "pods restart onto the operator's template one at a time")
    return True


async def _take_over_service(t: Tick, name: str) -> None:
    """The bookie ids' headless Service, deleted when it is somebody else's so that this tick's apply creates the
    operator's own (server-side apply cannot drop the other owner's ports, whose names would clash with the
    operator's). Its DNS names are gone only until then; the bookies' registrations carry their addresses too."""
    service = await t.op.kube.get("Service", t.namespace, name)
    if service is not None and not _is_ours(t, service):
        await t.op.kube.delete("Service", t.namespace, name)


async def _label_pods(t: Tick, sts: Obj) -> None:
    """The operator's selector labels added to each pod of the StatefulSet (a metadata change: nothing restarts),
    so that its StatefulSet, Services and observation find them once they are orphaned."""
    selector = (sts["spec"].get("selector") or {}).get("matchLabels") or {}
    wanted = builders.selector_labels(t.name)
    for pod in await t.op.kube.list("Pod", t.namespace, ",".join(f"{k}={v}" for k, v in selector.items())):
        ordinal = builders.ordinal_of(pod["metadata"]["name"])
        if ordinal is None or pod["metadata"]["name"] != builders.pod_name(t.name, ordinal):
            continue
        labels = pod["metadata"].get("labels") or {}
        if all(labels.get(k) == v for k, v in wanted.items()):
            continue
        await t.op.kube.apply({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": pod["metadata"]["name"], "namespace": t.namespace,
                                            "labels": wanted}})


async def _follow_roll(t: Tick, state: AdoptionStatus) -> None:
    assert state.found is not None
    sts = await t.op.kube.get("StatefulSet", t.namespace, state.found.stateful_set_name)
    pods = await t.op.kube.list("Pod", t.namespace, builders.label_selector(t.name))
    replicas = int((sts or {}).get("spec", {}).get("replicas", state.found.replicas))
    if plan.next_phase("Rolling", True, False, _is_ours(t, sts), plan.rolled(sts, pods, replicas)) == "Adopted":
        _move(t, "Adopted", f"every pod runs the operator's template ({replicas} bookies, ids and claims kept)")
        t.event("Normal", "Adopted", f"StatefulSet {state.found.stateful_set_name}: every pod runs the "
                "operator's template; bookie ids and claims kept")
        t.condition(CONDITION, False, "Adopted", t.status.adoption.message if t.status.adoption else "")
        return
    revision = ((sts or {}).get("status") or {}).get("updateRevision")
    done = sum(1 for p in pods if (p["metadata"].get("labels") or {}).get("controller-revision-hash") == revision)
    t.condition(CONDITION, True, "Rolling", f"{done} of {replicas} pods on the operator's template")

