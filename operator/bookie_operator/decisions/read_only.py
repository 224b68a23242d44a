"""Read-only control from disk usage: which bookies should take writes, forced GC, scale-up under pressure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from bookie_operator.decisions.observed import ObservedBookie, sort_by_ordinal
from bookie_operator.models import BookieClusterSpec, DiskPolicySpec

FORCED_GC_COOLDOWN = dt.timedelta(minutes=10)


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
