"""Decommissioning a chosen bookie (``spec.decommission``), whatever its ordinal, kept in
``status.decommissionRequests``.

A StatefulSet can only remove its highest ordinal, so a chosen bookie is not removed but replaced by an empty one:
its ledgers leave it exactly as in a scale-down (the same phases, through ``decommission_step``), then its cookie
is deleted and its pod and volumes are deleted, and the StatefulSet re-creates the ordinal with empty disks. The
bookie id is derived from the ordinal, so the new bookie has the same id; BookKeeper takes it as a new bookie
because no cookie and no ledger ensemble names that id any more, and it writes a fresh cookie when it starts.

MarkingReadOnly -> Recovering -> AwaitingReplication -> DeletingCookie -> RecreatingBookie -> AwaitingNewBookie
-> Done. Every action is idempotent, so an operator restarted in any phase repeats at most one.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable
from dataclasses import dataclass

from bookie_operator.decisions.decommission import (
    CANCELLABLE,
    DecommissionAction,
    DecommissionFacts,
    decommission_step,
)
from bookie_operator.decisions.observed import iso
from bookie_operator.models import BookieClusterSpec, DecommissionRequestStatus, DecommissionStatus

ACTIVE = ("MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie", "RecreatingBookie",
          "AwaitingNewBookie")
# Phases in which the old bookie still runs: it stays read-only and out of compactions.
OLD_BOOKIE_RUNS = ("MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie", "RecreatingBookie")


def resolve_entry(entry: str, cluster: str, replicas: int, bookie_id: Callable[[int], str]) -> int | str:
    """The ordinal a spec.decommission entry names (an ordinal, a pod name or a bookie id), or why it names none
    of the ``replicas`` bookies."""
    text = entry.strip()
    ordinal: int | None = None
    if text.isdigit():
        ordinal = int(text)
    elif text.startswith(f"{cluster}-") and text.removeprefix(f"{cluster}-").isdigit():
        ordinal = int(text.removeprefix(f"{cluster}-"))
    else:
        ordinal = next((o for o in range(replicas) if bookie_id(o) == text), None)
        if ordinal is None:
            return (f"{entry!r} is not a bookie of this cluster: name an ordinal (0..{replicas - 1}), a pod "
                    f"({cluster}-N) or a bookie id ({bookie_id(0)})")
    if ordinal >= replicas:
        return f"{entry!r}: there is no bookie {cluster}-{ordinal}, the cluster runs ordinals 0..{replicas - 1}"
    return ordinal


@dataclass(frozen=True)
class Gate:
    """What must hold before a chosen decommission starts (checked only when one would start)."""

    busy: str | None                    # another operation holding the bookies (scale-down, switch, scaling)
    under_replicated: int | None        # None: ZooKeeper could not tell
    not_ready: list[str]                # bookie pods that are not ready


def refusal(ordinal: int, replicas: int, spec: BookieClusterSpec) -> str | None:
    """Why decommissioning ``ordinal`` can never work in this spec (as opposed to waiting for a better moment)."""
    if replicas - 1 < spec.ensemble_size:
        return (f"the other {replicas - 1} bookies cannot hold an ensemble of {spec.ensemble_size} "
                "(spec.ensembleSize) while it is re-replicated: add a bookie first")
    return None


def hold_reason(gate: Gate) -> str | None:
    if gate.busy:
        return f"waiting for {gate.busy}"
    if gate.under_replicated is None:
        return "waiting for ZooKeeper to tell how many ledgers are under-replicated"
    if gate.under_replicated:
        return f"{gate.under_replicated} ledgers are under-replicated: their recovery goes first"
    if gate.not_ready:
        return f"waiting for {', '.join(gate.not_ready)} to be ready"
    return None


@dataclass(frozen=True)
class Plan:
    requests: list[DecommissionRequestStatus]   # the new status.decommissionRequests
    start: DecommissionRequestStatus | None     # the request that starts this tick (already in ``requests``)
    cancelled: list[DecommissionRequestStatus]  # in progress, removed from the spec in time: made writable again


def plan_requests(entries: list[str], previous: list[DecommissionRequestStatus],
                  resolved: dict[str, int | str], refusals: dict[int, str | None], gate: Gate,
                  now: dt.datetime) -> Plan:
    """Each spec entry's request: kept as it was when it is in progress or done, refused when it names no bookie,
    otherwise held or queued, and the first waiting one started when nothing else runs and the gate is open.

    ``resolved``: entry -> ordinal, or why it names none; ``refusals``: ordinal -> why it can never be
    decommissioned. A request whose entry left the spec is dropped (a done one: the entry may be added again to
    decommission that ordinal again); one in progress is cancelled before its cookie is deleted, else kept."""
    by_entry = {r.entry: r for r in previous}
    wanted = set(entries)
    cancelled = [r for r in previous if r.entry not in wanted and r.phase in CANCELLABLE]
    orphans = [r for r in previous if r.entry not in wanted and r.phase in ACTIVE and r.phase not in CANCELLABLE]
    running = next((r for r in previous if r.phase in ACTIVE and r not in cancelled), None)
    out: list[DecommissionRequestStatus] = list(orphans)
    start: DecommissionRequestStatus | None = None
    claimed: dict[int, str] = {}
    for entry in entries:
        old = by_entry.get(entry)
        if old is not None and old.phase in (*ACTIVE, "Done"):
            out.append(old)
            if old.ordinal is not None:
                claimed[old.ordinal] = entry
            continue
        target = resolved[entry]
        if isinstance(target, str):
            out.append(_waiting(old, entry, "Refused", target, None, now))
            continue
        if target in claimed:
            out.append(_waiting(old, entry, "Refused", f"names the same bookie as {claimed[target]!r}", target, now))
            continue
        claimed[target] = entry
        refused = refusals.get(target)
        if refused:
            out.append(_waiting(old, entry, "Refused", refused, target, now))
            continue
        first = running or start
        if first is not None:
            out.append(_waiting(old, entry, "Queued", f"after {first.entry!r}", target, now))
            continue
        held = hold_reason(gate)
        if held:
            out.append(_waiting(old, entry, "Held", held, target, now))
            continue
        start = DecommissionRequestStatus(entry=entry, phase="MarkingReadOnly", ordinal=target,
                                          phase_since=iso(now), started_at=iso(now))
        out.append(start)
    return Plan(out, start, cancelled)


def _waiting(old: DecommissionRequestStatus | None, entry: str, phase: str, message: str, ordinal: int | None,
             now: dt.datetime) -> DecommissionRequestStatus:
    """A request that does not run, keeping its time when nothing about it changed (no new Event then)."""
    if old is not None and old.phase == phase and old.message == message:
        return old
    return DecommissionRequestStatus.model_validate(
        {"entry": entry, "phase": phase, "message": message, "ordinal": ordinal, "phaseSince": iso(now)})


@dataclass(frozen=True)
class RetireFacts:
    """What the reconcile observed about the chosen bookie (only what its phase needs; None: unknown)."""

    read_only: bool | None = None
    ledgers_referencing: int | None = None
    under_replicated: int | None = None
    cookie_exists: bool | None = None
    pod_uid: str | None = None          # the uid of the pod at the ordinal now (None: no pod)
    new_bookie_ready: bool = False      # its successor: pod ready, admin API answered writable, registered
    # Its successor, on empty volumes, is stopped by a cookie in ZooKeeper: one the old pod wrote when its
    # container restarted after DeletingCookie (a dead bookie crash-looping on its lost disk does).
    new_bookie_blocked_by_cookie: bool = False


class RetireAction(enum.StrEnum):
    """What the reconcile does for a chosen decommission (each idempotent)."""

    SET_READ_ONLY = "set-read-only"
    SET_WRITABLE = "set-writable"
    REQUEST_RECOVERY = "request-recovery"
    DELETE_COOKIE = "delete-cookie"
    DELETE_CLAIMS = "delete-claims"      # before the pod: the claims go once the pod releases them
    DELETE_POD = "delete-pod"            # the StatefulSet re-creates it, on new empty claims


@dataclass(frozen=True)
class RetireStep:
    status: DecommissionRequestStatus
    actions: list[RetireAction]
    waiting: str | None


_SHARED = {DecommissionAction.SET_READ_ONLY: RetireAction.SET_READ_ONLY,
           DecommissionAction.REQUEST_RECOVERY: RetireAction.REQUEST_RECOVERY}


def retire_step(state: DecommissionRequestStatus, facts: RetireFacts, spec: BookieClusterSpec,
                now: dt.datetime) -> RetireStep:
    """One step of a chosen decommission in progress."""
    def to(phase: str, message: str = "", **extra: str | None) -> DecommissionRequestStatus:
        return state.model_copy(update={"phase": phase, "phase_since": iso(now), "message": message, **extra})

    if state.phase in CANCELLABLE:
        return _shared_step(state, facts, spec, now)
    if state.phase == "DeletingCookie":
        if facts.cookie_exists is False:
            return RetireStep(to("RecreatingBookie"), [], None)
        return RetireStep(state, [RetireAction.DELETE_COOKIE], "cookie deletion")
    if state.phase == "RecreatingBookie":
        if facts.pod_uid is not None and facts.pod_uid == state.old_pod_uid:
            return RetireStep(state, [RetireAction.DELETE_CLAIMS, RetireAction.DELETE_POD],
                              f"pod {state.pod} and its volumes to be deleted")
        return RetireStep(to("AwaitingNewBookie"), [], None)
    if state.phase == "AwaitingNewBookie":
        # Empty was checked before the cookie went: the new bookie may take new ledgers at once.
        if facts.new_bookie_ready and facts.cookie_exists:
            return RetireStep(to("Done", completed_at=iso(now)), [], None)
        if facts.new_bookie_blocked_by_cookie and facts.cookie_exists:
            what = f"the new empty {state.pod} to start: the old bookie's cookie written again is deleted"
            return RetireStep(state.model_copy(update={"message": what}), [RetireAction.DELETE_COOKIE], what)
        what = f"the new empty {state.pod} to start, register and be writable"
        return RetireStep(state.model_copy(update={"message": what}), [], what)
    raise AssertionError(f"no step for phase {state.phase}")


def _shared_step(state: DecommissionRequestStatus, facts: RetireFacts, spec: BookieClusterSpec,
                 now: dt.datetime) -> RetireStep:
    """Read-only, re-replication and its verification: the scale-down's own phases and rules."""
    assert state.ordinal is not None and state.pod is not None and state.bookie_id is not None
    shared = DecommissionStatus(ordinal=state.ordinal, pod=state.pod, bookie_id=state.bookie_id,
                                phase=state.phase,  # type: ignore[arg-type]  # checked: a CANCELLABLE phase
                                started_at=state.started_at or state.phase_since, phase_since=state.phase_since,
                                message=state.message, recovery_requested_at=state.recovery_requested_at)
    step = decommission_step(shared, DecommissionFacts(
        read_only=facts.read_only, ledgers_referencing=facts.ledgers_referencing,
        under_replicated=facts.under_replicated, cookie_exists=facts.cookie_exists, pod_exists=True,
        claims_remaining=0), spec, now, desired=0)      # desired 0: only removing the entry cancels
    assert step.status is not None
    new = state.model_copy(update={"phase": step.status.phase, "phase_since": step.status.phase_since,
                                   "message": step.status.message})
    return RetireStep(new, [_SHARED[a] for a in step.actions], step.waiting)


def old_bookie_runs(requests: list[DecommissionRequestStatus]) -> int | None:
    """The ordinal whose bookie is leaving (kept read-only, out of compactions), if any."""
    return next((r.ordinal for r in requests if r.phase in OLD_BOOKIE_RUNS), None)


def in_progress(requests: list[DecommissionRequestStatus]) -> DecommissionRequestStatus | None:
    return next((r for r in requests if r.phase in ACTIVE), None)
