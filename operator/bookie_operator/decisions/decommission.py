"""The resumable decommission state machine kept in ``status.decommission``."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass

from bookie_operator.decisions.observed import iso, parse_time
from bookie_operator.models import BookieClusterSpec, DecommissionPhase, DecommissionStatus


def ordinal_to_decommission(statefulset_replicas: int, desired: int) -> int | None:
    """The highest ordinal goes first (the StatefulSet can only remove its highest ordinal)."""
    return statefulset_replicas - 1 if statefulset_replicas > desired else None


@dataclass(frozen=True)
class DecommissionFacts:
    """What the reconcile observed about the bookie being decommissioned and the cluster."""

    read_only: bool | None              # the bookie's state (None: unreachable)
    ledgers_referencing: int | None     # ledgers whose ensembles contain the bookie (None: unknown)
    under_replicated: int | None        # under-replicated ledgers in the cluster (None: unknown)
    cookie_exists: bool | None
    pod_exists: bool
    claims_remaining: int               # PVCs of the ordinal still present


class DecommissionAction(enum.StrEnum):
    """What the reconcile does for a decommission step (each idempotent)."""

    SET_READ_ONLY = "set-read-only"
    SET_WRITABLE = "set-writable"            # cancelled: the bookie takes writes again
    REQUEST_RECOVERY = "request-recovery"    # ask a surviving bookie's autorecovery to re-replicate
    DELETE_COOKIE = "delete-cookie"
    SHRINK = "shrink"                        # the StatefulSet drops the ordinal (the apply step writes replicas)
    DELETE_CLAIMS = "delete-claims"


@dataclass(frozen=True)
class DecommissionStep:
    status: DecommissionStatus | None   # None: finished (or cancelled)
    actions: list[DecommissionAction]
    waiting: str | None                 # what it waits for (the reconcile retries later)
    finished: bool = False
    cancelled: bool = False


_ORDER: list[DecommissionPhase] = ["MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie",
                                   "ScalingDown", "ApplyingPvcPolicy"]
CANCELLABLE: set[str] = {"MarkingReadOnly", "Recovering", "AwaitingReplication"}
UNREACHABLE_GRACE_S = 300.0


def start_decommission(ordinal: int, pod: str, bookie_id: str, now: dt.datetime) -> DecommissionStatus:
    return DecommissionStatus(ordinal=ordinal, pod=pod, bookie_id=bookie_id, phase="MarkingReadOnly",
                              started_at=iso(now), phase_since=iso(now))


def decommission_step(state: DecommissionStatus, facts: DecommissionFacts, spec: BookieClusterSpec,
                      now: dt.datetime, desired: int | None = None) -> DecommissionStep:
    """One step of the resumable decommission state machine (kept in status.decommission).

    MarkingReadOnly -> Recovering -> AwaitingReplication -> DeletingCookie -> ScalingDown -> ApplyingPvcPolicy.
    Each phase's action is idempotent, so an operator restarted in any phase repeats at most one action.
    Raising the desired count (``desired``: spec.replicas plus the bookies the operator added for disk
    pressure; spec.replicas when omitted) above the ordinal before the cookie is touched cancels it (the bookie
    is made writable again); from DeletingCookie on it completes.
    """
    wanted = spec.replicas if desired is None else desired

    def to(phase: DecommissionPhase, message: str = "") -> DecommissionStatus:
        return state.model_copy(update={"phase": phase, "phase_since": iso(now), "message": message})

    if wanted > state.ordinal and state.phase in CANCELLABLE:
        return DecommissionStep(None, [DecommissionAction.SET_WRITABLE], None, cancelled=True)
    phase = state.phase
    if phase == "MarkingReadOnly":
        if facts.read_only:
            return DecommissionStep(to("Recovering"), [], None)
        down_for = (now - (parse_time(state.phase_since) or now)).total_seconds()
        if facts.read_only is None and down_for > UNREACHABLE_GRACE_S:
            # A bookie that is down takes no writes anyway; its ledgers still have to be re-replicated.
            return DecommissionStep(to("Recovering", "bookie unreachable, not marked read-only"), [], None)
        return DecommissionStep(state, [DecommissionAction.SET_READ_ONLY], "bookie to report read-only")
    if phase == "Recovering":
        if facts.ledgers_referencing == 0 and facts.under_replicated == 0:
            return DecommissionStep(to("DeletingCookie"), [], None)
        if state.recovery_requested_at is not None:
            return DecommissionStep(to("AwaitingReplication"), [], None)
        return DecommissionStep(state, [DecommissionAction.REQUEST_RECOVERY],
                                "autorecovery to accept the recovery request")
    if phase == "AwaitingReplication":
        if facts.ledgers_referencing == 0 and facts.under_replicated == 0:
            return DecommissionStep(to("DeletingCookie"), [], None)
        waited = (now - (parse_time(state.phase_since) or now)).total_seconds()
        what = (f"{facts.ledgers_referencing if facts.ledgers_referencing is not None else '?'} ledgers still "
                f"reference {state.bookie_id}, "
                f"{facts.under_replicated if facts.under_replicated is not None else '?'} under-replicated")
        if waited > spec.scale_down.recovery_timeout_seconds:
            what += f" (waiting {waited:.0f}s > recoveryTimeoutSeconds)"
        return DecommissionStep(state.model_copy(update={"message": what}), [], what)
    if phase == "DeletingCookie":
        if spec.scale_down.pvc_policy == "Retain" or facts.cookie_exists is False:
            return DecommissionStep(to("ScalingDown"), [], None)
        return DecommissionStep(state, [DecommissionAction.DELETE_COOKIE], "cookie deletion")
    if phase == "ScalingDown":
        if not facts.pod_exists:
            return DecommissionStep(to("ApplyingPvcPolicy"), [], None)
        return DecommissionStep(state, [DecommissionAction.SHRINK], f"pod {state.pod} to terminate")
    if phase == "ApplyingPvcPolicy":
        if spec.scale_down.pvc_policy == "Delete" and facts.cookie_exists:
            # A dead bookie's pod, restarting on its empty disk between DeletingCookie and its end, wrote its
            # cookie again; left there, it would refuse the empty bookie a later scale-up puts at this ordinal.
            return DecommissionStep(state, [DecommissionAction.DELETE_COOKIE], "the cookie its pod wrote again")
        if spec.scale_down.pvc_policy == "Retain" or facts.claims_remaining == 0:
            return DecommissionStep(None, [], None, finished=True)
        return DecommissionStep(state, [DecommissionAction.DELETE_CLAIMS], f"volumes of {state.pod} to be deleted")
    raise AssertionError(f"unknown phase {phase}")


def statefulset_replicas(desired: int, current: int | None, decommission: DecommissionStatus | None) -> int:
    """Replicas to write into the StatefulSet (``desired``: spec.replicas plus the bookies added for disk
    pressure): up at once; down only when a decommission reaches ScalingDown."""
    if current is None:
        return desired
    if desired >= current:
        return desired
    if decommission is not None and _ORDER.index(decommission.phase) >= _ORDER.index("ScalingDown"):
        return decommission.ordinal
    return current
