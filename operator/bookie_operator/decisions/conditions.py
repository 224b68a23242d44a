"""Conditions: Ready, Degraded, Progressing and Decommissioning from what a reconcile observed and did, and
Reconciling and Stalled, the two that kstatus (Flux's health checks, kpt) reads: Reconciling while the operator is
still changing something, Stalled when it cannot go on without the user (a bookie that cannot start, an invalid
spec, a refused adoption). Waiting alone (under-replicated ledgers healing, bookies starting) is never Stalled.

kstatus has no Suspended: a long operation the user holds (an adoption awaiting approval, a paused switch or
rebalance) is Reconciling=True with the hold as its reason, so that Flux and kpt keep waiting (InProgress) instead
of calling a half-done change Current or a deliberate pause Failed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from bookie_operator.decisions.observed import iso
from bookie_operator.models import (
    CONDITION_MESSAGE_MAX,
    Condition,
    DecommissionRequestStatus,
    DecommissionStatus,
    ImplementationSwitchStatus,
    RebalanceStatus,
)


def set_condition(conditions: list[Condition], type_: str, status: bool | None, reason: str, message: str,
                  now: dt.datetime, generation: int | None) -> list[Condition]:
    """Upsert a condition; lastTransitionTime changes only when the status does.

    Every field metav1.Condition requires is written (the CRD requires them too, so a condition without one
    would make the API server refuse the whole status patch); a message is cut to the length it allows."""
    value = {True: "True", False: "False", None: "Unknown"}[status]
    if len(message) > CONDITION_MESSAGE_MAX:
        message = message[:CONDITION_MESSAGE_MAX - len(_CUT)] + _CUT
    previous = condition(conditions, type_)
    when = previous.last_transition_time if previous is not None and previous.status == value else iso(now)
    new = Condition(type=type_, status=value, reason=reason, message=message,  # type: ignore[arg-type]
                    last_transition_time=when, observed_generation=generation)
    if previous is None:
        return [*conditions, new]
    return [new if c.type == type_ else c for c in conditions]


_CUT = " [...]"


def condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


@dataclass(frozen=True)
class ConditionValue:
    type: str
    status: bool | None
    reason: str
    message: str = ""


@dataclass(frozen=True)
class ClusterFacts:
    """What one reconcile saw and did, as far as the cluster's conditions are concerned."""

    desired_replicas: int
    ensemble_size: int
    existing: int                       # bookie pods that exist
    ready: int                          # ... and are Ready
    writable: int                       # ... Ready and writable
    scaling: bool                       # the StatefulSet's replicas differ from what the spec asks
    outdated: list[str]                 # pods not at the StatefulSet's update revision
    compaction_run: str | None          # the fire time of the compaction run in progress
    decommission: DecommissionStatus | None          # the scale-down's, of the highest ordinal
    unregistered: list[str]             # pods whose bookie is not registered in ZooKeeper
    under_replicated: int | None
    problems: list[str] = field(default_factory=list)   # what the steps could not do this tick
    problem_reason: str | None = None                   # a specific Degraded reason (bookies that cannot start)
    # spec.decommission's requests in one of their active phases (a chosen bookie leaving, forced or not)
    chosen_decommissions: list[DecommissionRequestStatus] = field(default_factory=list)
    # long operations held by the user until they let them go on: (reason, message) each, from ``held_by_user``
    held: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ClusterConditions:
    conditions: list[ConditionValue]
    waiting: list[str]                  # what the cluster waits for before it is Ready


def cluster_conditions(f: ClusterFacts) -> ClusterConditions:
    """Progressing, Reconciling, Decommissioning, Degraded, Stalled and Ready, and what Ready still waits for."""
    progressing = []
    if f.scaling:
        progressing.append(f"scaling to {f.desired_replicas}")
    if f.outdated:
        progressing.append(f"rolling {', '.join(f.outdated)}")
    if f.compaction_run is not None:
        progressing.append(f"compacting (run for {f.compaction_run})")
    if f.ready < f.desired_replicas:
        progressing.append(f"{f.ready}/{f.desired_replicas} bookies ready")
    stalled = f.problem_reason is not None            # a specific failure: waiting alone will not clear it
    leaving = _decommissioning(f)
    # kstatus takes the first of Reconciling and Stalled that is True: a stalled cluster is not reconciling,
    # however far from Ready.
    out = [ConditionValue("Progressing", bool(progressing), "Reconciling" if progressing else "Settled",
                          "; ".join(progressing)),
           _reconciling(progressing, f.held, leaving, stalled), leaving]
    problems = list(f.problems)
    if f.writable < f.ensemble_size and f.ready >= f.ensemble_size:
        problems.append(f"only {f.writable} writable bookies, ensembleSize is {f.ensemble_size}")
    if f.under_replicated:
        problems.append(f"{f.under_replicated} under-replicated ledgers")
    reason = f.problem_reason or ("Problems" if problems else "Healthy")
    out.append(ConditionValue("Degraded", bool(problems), reason, "; ".join(problems)))
    out.append(ConditionValue("Stalled", stalled, f.problem_reason or "NotStalled",
                              "; ".join(problems) if stalled else ""))
    waiting = []
    all_ready = f.ready >= f.desired_replicas and f.existing == f.desired_replicas and f.decommission is None
    if f.unregistered:
        all_ready = False
        waiting.append(f"{', '.join(f.unregistered)} not registered in ZooKeeper yet")
    if all_ready and f.writable >= f.ensemble_size:
        out.append(ConditionValue("Ready", True, "BookiesReady", f"{f.ready} bookies ready, {f.writable} writable"))
    else:
        why = "Decommissioning" if f.decommission else ("NotEnoughWritable" if all_ready else "BookiesNotReady")
        out.append(ConditionValue("Ready", False, why, f"{f.ready}/{f.desired_replicas} ready, {f.writable} writable"))
        if not all_ready:
            waiting.append(f"{f.ready}/{f.desired_replicas} bookies ready")
    return ClusterConditions(out, waiting)


def _reconciling(progressing: list[str], held: list[tuple[str, str]], leaving: ConditionValue,
                 stalled: bool) -> ConditionValue:
    """True while the operator changes something (a bookie leaving included, even when nothing else moves) or the
    user holds a change half-done; the reason names the hold first, since while it lasts nothing moves towards
    the spec, then a decommission (what else changes follows in the message)."""
    decommissioning = [leaving.message] if leaving.status else []
    message = "; ".join([m for _, m in held] + decommissioning + progressing)
    if stalled:
        return ConditionValue("Reconciling", False, "Stalled", message)
    if held:
        return ConditionValue("Reconciling", True, held[0][0], message)
    if decommissioning:
        return ConditionValue("Reconciling", True, "Decommissioning", message)
    return ConditionValue("Reconciling", bool(progressing), "Reconciling" if progressing else "Settled", message)


def held_by_user(switch: ImplementationSwitchStatus | None,
                 rebalance: RebalanceStatus | None) -> list[tuple[str, str]]:
    """(reason, message) of each long operation paused by the user: a switch half-done, a rebalance stopped."""
    held = []
    if switch is not None and switch.phase == "Paused":
        held.append(("ImplementationSwitchPaused",
                     f"implementation switch {switch.source} to {switch.target} paused by "
                     f"spec.implementationSwitch.paused ({len(switch.converted)} switched, "
                     f"{len(switch.remaining)} to go)"))
    if rebalance is not None and rebalance.phase == "Paused":
        held.append(("RebalancePaused", "rebalance paused by spec.rebalance.paused"))
    return held


def reconciling_conditions(reason: str, message: str) -> list[ConditionValue]:
    """kstatus's pair while a step the reconcile's status step does not follow goes on or waits for the user (an
    adoption awaiting approval, a StatefulSet being replaced): InProgress, whatever was written before."""
    return [ConditionValue("Reconciling", True, reason, message),
            ConditionValue("Stalled", False, "NotStalled", "")]


def stalled_conditions(reason: str, message: str) -> list[ConditionValue]:
    """kstatus's pair when the operator cannot go on until the user changes something (a refused adoption):
    Failed, with the refusal's reason and message."""
    return [ConditionValue("Reconciling", False, reason, message),
            ConditionValue("Stalled", True, reason, message)]


def _decommissioning(f: ClusterFacts) -> ConditionValue:
    """True while a bookie leaves, by a scale-down or by spec.decommission; the reason is the phase of the first
    (the scale-down's, else the chosen one's in progress), the message names every bookie leaving."""
    leaving: list[tuple[str, str | None, str | None, str]] = [
        (d.phase, d.pod, d.bookie_id, d.message) for d in ([f.decommission] if f.decommission else [])]
    leaving += [(r.phase, r.pod, r.bookie_id, r.message) for r in f.chosen_decommissions]
    if not leaving:
        return ConditionValue("Decommissioning", False, "Idle")
    messages = [f"{pod} ({bookie_id}): {message}".rstrip(": ") for _, pod, bookie_id, message in leaving]
    if len(leaving) > 1:
        messages = [f"{m} [{phase}]" for m, (phase, *_) in zip(messages, leaving, strict=True)]
    return ConditionValue("Decommissioning", True, leaving[0][0], "; ".join(messages))


def invalid_spec_conditions(message: str) -> list[ConditionValue]:
    """An invalid spec: nothing is applied until the user changes it, so the cluster is not Ready, Degraded and
    Stalled, and no longer Progressing/Reconciling (which would make kstatus wait instead of fail)."""
    return [ConditionValue("Ready", False, "InvalidSpec", message),
            ConditionValue("Degraded", True, "InvalidSpec", message),
            ConditionValue("Stalled", True, "InvalidSpec", message),
            ConditionValue("Progressing", False, "InvalidSpec", message),
            ConditionValue("Reconciling", False, "InvalidSpec", message)]
