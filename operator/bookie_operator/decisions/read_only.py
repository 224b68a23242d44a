"""Read-only control from disk usage: which bookies should take writes, forced GC, scale-up under pressure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from bookie_operator.decisions.observed import ObservedBookie, sort_by_ordinal
from bookie_operator.models import BookieClusterSpec, DiskPolicySpec

FORCED_GC_COOLDOWN = dt.timedelta(minutes=10)
HELD_PREFIX = "bookie: read-only until a person acts: "
DISK_PREFIX = "operator: disk"


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
    the others are held writable and reported as disk pressure. A bookie that holds itself read-only (a
    damaged journal, ``forceReadOnlyBookie``) stays so and is not counted writable.
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
        if b.held_read_only is not None:
            decisions[b.ordinal] = ReadOnlyDecision(b.ordinal, True, f"{HELD_PREFIX}{b.held_read_only}")
            continue
        used = b.used_fraction
        was_ro = (previous_reasons.get(b.ordinal) or "").startswith(DISK_PREFIX)
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
            b.ordinal, True, f"{DISK_PREFIX} {used:.0%} {'>=' if used >= hwm else 'not yet below'} "
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


def capped_scale_up(spec: BookieClusterSpec, scaled_up_by: int) -> int:
    """The operator's own bookies (``status.scaledUpBy``) never take the cluster beyond maxReplicas: a user who
    raises spec.replicas to cover them (or lowers the maximum) takes them over instead of adding to them."""
    return max(0, min(scaled_up_by, spec.disk_policy.scale_up.max_replicas - spec.replicas))


def scale_up_for_pressure(spec: BookieClusterSpec, plan: ReadOnlyPlan, settled: bool,
                          scaled_up_by: int = 0) -> int | None:
    """New ``status.scaledUpBy`` when disk pressure holds bookies writable and the spec allows one more bookie.

    The count lives in status, never in spec.replicas: the spec stays what its author (or a GitOps controller)
    wrote, and the StatefulSet gets spec.replicas plus this.
    """
    if not (plan.disk_pressure and spec.disk_policy.scale_up.enabled and settled):
        return None
    if spec.replicas + scaled_up_by >= spec.disk_policy.scale_up.max_replicas:
        return None
    return scaled_up_by + 1


def scale_back_after_pressure(spec: BookieClusterSpec, bookies: list[ObservedBookie], plan: ReadOnlyPlan,
                              settled: bool, scaled_up_by: int) -> int | None:
    """New ``status.scaledUpBy`` (one less) once the bookies the operator added are no longer needed.

    That is when nothing is read-only or held writable for disk usage, and the data of every bookie would fit
    on all but the highest ordinal (the one the decommission removes) below the low-water mark, so moving its
    ledgers away cannot bring the pressure back. Lowering the count starts the ordinary safe decommission.
    """
    if scaled_up_by <= 0 or not settled or plan.disk_pressure:
        return None
    if any(d.read_only for d in plan.decisions.values()):
        return None
    known = [b for b in bookies if b.exists and b.reachable and b.total_bytes and b.free_bytes is not None]
    if not known or len(known) != len([b for b in bookies if b.exists]):
        return None
    highest = max(b.ordinal for b in known)
    used = sum((b.total_bytes or 0) - (b.free_bytes or 0) for b in known)
    remaining = sum(b.total_bytes or 0 for b in known if b.ordinal != highest)
    if remaining <= 0 or used / remaining >= spec.disk_policy.writable_low_water_mark:
        return None
    return scaled_up_by - 1
