"""Pure decisions: observed state (+ what the operator remembered in status) -> what to do next.

Nothing here does I/O or reads the clock; ``now`` is passed in. The reconcile gathers an ``Observed`` snapshot,
asks these functions, performs the actions and writes the returned status. Every function is total: an
unknown or unreachable bookie is a fact to decide on, not an exception.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from bookie_operator import cron
from bookie_operator.models import (
    BookieClusterSpec,
    CompactionRunStatus,
    CompactionSpec,
    CompactionStatus,
    Condition,
    DecommissionPhase,
    DecommissionStatus,
    DiskPolicySpec,
)

FORCED_GC_COOLDOWN = dt.timedelta(minutes=10)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


# -------------------------------------------------------------------------------------------- observed
@dataclass(frozen=True)
class GcInfo:
    """``GET /api/v1/bookie/gc`` + ``gc_details`` summed over the ledger directories."""

    in_force_gc: bool
    compacting: bool
    major_count: int
    minor_count: int
    last_major_ms: int
    last_minor_ms: int


@dataclass(frozen=True)
class ObservedBookie:
    ordinal: int
    pod: str
    bookie_id: str
    exists: bool = True                 # the pod exists
    ready: bool = False                 # pod Ready condition
    reachable: bool = False             # the admin REST API answered
    read_only: bool | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None
    gc: GcInfo | None = None
    revision: str | None = None         # controller-revision-hash of the pod
    terminating: bool = False

    @property
    def used_fraction(self) -> float | None:
        if self.free_bytes is None or not self.total_bytes:
            return None
        return 1 - self.free_bytes / self.total_bytes


def sort_by_ordinal(bookies: list[ObservedBookie]) -> list[ObservedBookie]:
    """Integer order (``-2`` before ``-10``), never the pod name's string order (datastax/kaap#251)."""
    return sorted(bookies, key=lambda b: b.ordinal)


# ---------------------------------------------------------------------------------- read-only control
@dataclass(frozen=True)
class ReadOnlyDecision:
    ordinal: int
    read_only: bool
    reason: str | None                  # why it should be read-only (None: writable)


@dataclass
class ReadOnlyPlan:
    decisions: dict[int, ReadOnlyDecision]
    held_writable: list[int] = field(default_factory=list)  # above the hwm but needed to keep an ensemble
    writable_after: int = 0

    @property
    def disk_pressure(self) -> bool:
        return bool(self.held_writable)


def plan_read_only(bookies: list[ObservedBookie], policy: DiskPolicySpec, ensemble_size: int,
                   previous_reasons: Mapping[int, str | None], decommissioning: int | None = None) -> ReadOnlyPlan:
    """Desired read-only state of every reachable bookie, with hysteresis and the ensemble floor.

    At or above the high-water mark a bookie should be read-only; below the low-water mark writable; in
    between it keeps what the operator wanted last time (``previous_reasons``: reason strings the operator
    wrote, starting with ``operator:``). A bookie being decommissioned is read-only whatever its disk. The
    fullest candidates go read-only first, and only while at least ``ensemble_size`` bookies stay writable:
    the others are held writable and reported as disk pressure.
    """
    hwm, lwm = policy.read_only_high_water_mark, policy.writable_low_water_mark
    decisions: dict[int, ReadOnlyDecision] = {}
    candidates: list[tuple[float, ObservedBookie]] = []
    writable = 0
    for b in sort_by_ordinal(bookies):
        if not b.reachable:
            continue
        if b.ordinal == decommissioning:
            decisions[b.ordinal] = ReadOnlyDecision(b.ordinal, True, "operator: decommissioning")
            continue
        used = b.used_fraction
        was_ro = (previous_reasons.get(b.ordinal) or "").startswith("operator: disk")
        if used is not None and (used >= hwm or (was_ro and used >= lwm)):
            candidates.append((used, b))
        else:
            writable += 1
            decisions[b.ordinal] = ReadOnlyDecision(b.ordinal, False, None)
    plan = ReadOnlyPlan(decisions)
    # The least full candidates are the ones kept writable when the floor is reached.
    for used, b in sorted(candidates, key=lambda c: c[0]):
        if writable < ensemble_size:
            writable += 1
            plan.held_writable.append(b.ordinal)
            plan.decisions[b.ordinal] = ReadOnlyDecision(b.ordinal, False, None)
            continue
        mark = "high-water" if used >= hwm else "low-water"
        limit = hwm if used >= hwm else lwm
        plan.decisions[b.ordinal] = ReadOnlyDecision(
            b.ordinal, True, f"operator: disk {used:.0%} {'>=' if used >= hwm else 'not yet below'} "
            f"{mark} mark {limit:.0%}")
    plan.held_writable.sort()
    plan.writable_after = writable
    return plan


def should_force_gc(bookie: ObservedBookie, policy: DiskPolicySpec, last_forced: dt.datetime | None,
                    now: dt.datetime) -> bool:
    """Above the force-compaction ratio, trigger a forced GC (not while one runs, at most every 10 min)."""
    used = bookie.used_fraction
    if policy.force_compaction_ratio is None or used is None or not bookie.reachable:
        return False
    if used < policy.force_compaction_ratio:
        return False
    if bookie.gc is not None and (bookie.gc.in_force_gc or bookie.gc.compacting):
        return False
    return last_forced is None or now - last_forced >= FORCED_GC_COOLDOWN


def scale_up_for_pressure(spec: BookieClusterSpec, plan: ReadOnlyPlan, settled: bool) -> int | None:
    """New spec.replicas when disk pressure holds bookies writable and the spec allows adding one."""
    if not (plan.disk_pressure and spec.disk_policy.scale_up.enabled and settled):
        return None
    if spec.replicas >= spec.disk_policy.scale_up.max_replicas:
        return None
    return spec.replicas + 1


# -------------------------------------------------------------------------------- scheduled compaction
@dataclass(frozen=True)
class CompactionAction:
    kind: str                 # "trigger" | "finished" | "timeout" | "skipped"
    ordinal: int
    message: str = ""


def compaction_tick(spec: CompactionSpec, status: CompactionStatus, ordinals: list[int],
                    gc_by_ordinal: dict[int, GcInfo | None], now: dt.datetime,
                    created: dt.datetime) -> tuple[CompactionStatus, list[CompactionAction], list[str]]:
    """Advance the compaction schedule one tick. Returns the new status, actions to perform, and notes.

    A run due now (or missed by at most ``startingDeadlineSeconds``, e.g. while the operator was down) starts
    once, whatever the number of fire times it missed; older misses are counted and skipped. A run compacts
    the bookies one at a time in ordinal order: trigger, then wait until that bookie reports a finished
    compaction (its counters moved and no forced GC runs) or the per-bookie timeout passes.
    """
    status = status.model_copy(deep=True)
    actions: list[CompactionAction] = []
    notes: list[str] = []
    if spec.schedule is None:
        return CompactionStatus(last_schedule_time=status.last_schedule_time,
                                last_completion_time=status.last_completion_time,
                                missed_runs=status.missed_runs), actions, notes
    if status.run is None:
        reference = parse_time(status.last_schedule_time) or created
        due = cron.previous_at_or_before(spec.schedule, now)
        if due > reference:
            late = (now - due).total_seconds()
            if late <= spec.starting_deadline_seconds:
                status.run = CompactionRunStatus(scheduled_for=iso(due), pending=sorted(ordinals))
                notes.append(f"compaction run for {iso(due)} started ({len(ordinals)} bookies)")
            else:
                status.missed_runs += 1
                notes.append(f"compaction run for {iso(due)} skipped: missed by {late:.0f}s "
                             f"(> startingDeadlineSeconds {spec.starting_deadline_seconds})")
            status.last_schedule_time = iso(due)
    run = status.run
    if run is not None:
        if run.active is not None:
            gc = gc_by_ordinal.get(run.active)
            since = parse_time(run.active_since) or now
            # Finished: nothing runs and the bookie's counters or its last compaction time moved (Apache
            # BookKeeper's counters stay 0 without a stats provider; its times always move).
            finished = gc is not None and not gc.in_force_gc and not gc.compacting and (
                (run.baseline_major is not None and gc.major_count > run.baseline_major)
                or (run.baseline_minor is not None and gc.minor_count > run.baseline_minor)
                or (run.baseline_time_ms is not None
                    and max(gc.last_major_ms, gc.last_minor_ms) > run.baseline_time_ms))
            if finished:
                actions.append(CompactionAction("finished", run.active))
                run.done.append(run.active)
                run.active = None
            elif (now - since).total_seconds() > spec.bookie_timeout_seconds:
                actions.append(CompactionAction("timeout", run.active,
                                                f"no finished compaction within {spec.bookie_timeout_seconds}s"))
                run.active = None
        if run.active is None:
            while run.pending:
                nxt = run.pending.pop(0)
                gc = gc_by_ordinal.get(nxt)
                if nxt not in ordinals or gc is None:
                    actions.append(CompactionAction("skipped", nxt, "bookie unreachable or GC unavailable"))
                    continue
                run.active, run.active_since = nxt, iso(now)
                run.baseline_major, run.baseline_minor = gc.major_count, gc.minor_count
                run.baseline_time_ms = max(gc.last_major_ms, gc.last_minor_ms)
                actions.append(CompactionAction("trigger", nxt))
                break
        if run.active is None and not run.pending:
            status.last_completion_time = iso(now)
            status.run = None
            notes.append(f"compaction run for {run.scheduled_for} completed on {len(run.done)} bookies")
    status.next_schedule_time = iso(cron.next_after(spec.schedule, now))
    return status, actions, notes


def in_window(start: str, end: str, now: dt.datetime) -> bool:
    """Is ``now`` (UTC) inside the daily window [start, end)? A window may span midnight."""
    minutes = now.astimezone(dt.UTC).hour * 60 + now.astimezone(dt.UTC).minute
    s = int(start[:2]) * 60 + int(start[3:])
    e = int(end[:2]) * 60 + int(end[3:])
    return s <= minutes < e if s < e else minutes >= s or minutes < e


# ----------------------------------------------------------------------------------------- scale-down
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


@dataclass(frozen=True)
class DecommissionStep:
    status: DecommissionStatus | None   # None: finished (or cancelled)
    actions: list[str]                  # set-read-only, request-recovery, delete-cookie, shrink, delete-claims,
    #                                     set-writable
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
                      now: dt.datetime) -> DecommissionStep:
    """One step of the resumable decommission state machine (kept in status.decommission).

    MarkingReadOnly -> Recovering -> AwaitingReplication -> DeletingCookie -> ScalingDown -> ApplyingPvcPolicy.
    Each phase's action is idempotent, so an operator restarted in any phase repeats at most one action.
    Raising spec.replicas above the ordinal before the cookie is touched cancels it (the bookie is made
    writable again); from DeletingCookie on it completes.
    """

    def to(phase: DecommissionPhase, message: str = "") -> DecommissionStatus:
        return state.model_copy(update={"phase": phase, "phase_since": iso(now), "message": message})

    if spec.replicas > state.ordinal and state.phase in CANCELLABLE:
        return DecommissionStep(None, ["set-writable"], None, cancelled=True)
    phase = state.phase
    if phase == "MarkingReadOnly":
        if facts.read_only:
            return DecommissionStep(to("Recovering"), [], None)
        down_for = (now - (parse_time(state.phase_since) or now)).total_seconds()
        if facts.read_only is None and down_for > UNREACHABLE_GRACE_S:
            # A bookie that is down takes no writes anyway; its ledgers still have to be re-replicated.
            return DecommissionStep(to("Recovering", "bookie unreachable, not marked read-only"), [], None)
        return DecommissionStep(state, ["set-read-only"], "bookie to report read-only")
    if phase == "Recovering":
        if facts.ledgers_referencing == 0 and facts.under_replicated == 0:
            return DecommissionStep(to("DeletingCookie"), [], None)
        if state.recovery_requested_at is not None:
            return DecommissionStep(to("AwaitingReplication"), [], None)
        return DecommissionStep(state, ["request-recovery"], "autorecovery to accept the recovery request")
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
        return DecommissionStep(state, ["delete-cookie"], "cookie deletion")
    if phase == "ScalingDown":
        if not facts.pod_exists:
            return DecommissionStep(to("ApplyingPvcPolicy"), [], None)
        return DecommissionStep(state, ["shrink"], f"pod {state.pod} to terminate")
    if phase == "ApplyingPvcPolicy":
        if spec.scale_down.pvc_policy == "Retain" or facts.claims_remaining == 0:
            return DecommissionStep(None, [], None, finished=True)
        return DecommissionStep(state, ["delete-claims"], f"volumes of {state.pod} to be deleted")
    raise AssertionError(f"unknown phase {phase}")


def statefulset_replicas(spec_replicas: int, current: int | None, decommission: DecommissionStatus | None) -> int:
    """Replicas to write into the StatefulSet: up at once; down only when a decommission reaches ScalingDown."""
    if current is None:
        return spec_replicas
    if spec_replicas >= current:
        return spec_replicas
    if decommission is not None and _ORDER.index(decommission.phase) >= _ORDER.index("ScalingDown"):
        return decommission.ordinal
    return current


# ---------------------------------------------------------------------------------------- rolling restart
def pod_to_restart(bookies: list[ObservedBookie], update_revision: str | None, under_replicated: int | None,
                   replicas: int) -> tuple[ObservedBookie | None, str | None]:
    """One outdated pod to delete (highest ordinal first), only when every bookie is ready and nothing is
    under-replicated. Returns (pod, None) or (None, what it waits for)."""
    if update_revision is None:
        return None, None
    outdated = [b for b in sort_by_ordinal(bookies) if b.exists and b.revision != update_revision]
    if not outdated:
        return None, None
    present = [b for b in bookies if b.exists]
    if len(present) < replicas or any(not b.ready or b.terminating for b in present):
        return None, "every bookie ready before the next restart"
    if under_replicated is None or under_replicated > 0:
        return None, "no under-replicated ledgers before the next restart"
    return outdated[-1], None


# --------------------------------------------------------------------------------------------- conditions
def set_condition(conditions: list[Condition], type_: str, status: bool | None, reason: str, message: str,
                  now: dt.datetime, generation: int | None) -> list[Condition]:
    """Upsert a condition; lastTransitionTime changes only when the status does."""
    value = {True: "True", False: "False", None: "Unknown"}[status]
    out = []
    found = False
    for c in conditions:
        if c.type == type_:
            found = True
            when = c.last_transition_time if c.status == value else iso(now)
            out.append(Condition(type=type_, status=value, reason=reason, message=message,  # type: ignore[arg-type]
                                 last_transition_time=when, observed_generation=generation))
        else:
            out.append(c)
    if not found:
        out.append(Condition(type=type_, status=value, reason=reason, message=message,  # type: ignore[arg-type]
                             last_transition_time=iso(now), observed_generation=generation))
    return out


def condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
