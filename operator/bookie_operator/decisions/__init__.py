"""Pure decisions: observed state (+ what the operator remembered in status) -> what to do next.

Nothing here does I/O or reads the clock; ``now`` is passed in. The reconcile gathers observations, asks
these functions, performs the actions they return (enums the executors handle exhaustively) and writes the
returned status. Every function is total: an unknown or unreachable bookie is a fact to decide on, not an
exception. One module per concern:

- ``observed``: what a reconcile saw of each bookie, time helpers;
- ``read_only``: read-only control from disk usage, forced GC, scale-up under pressure and back;
- ``compaction``: the compaction schedule;
- ``audit``: the storage audit's schedule, its summary, data loss, compaction from its findings;
- ``decommission``: the scale-down state machine;
- ``retire``: a chosen bookie's decommission (spec.decommission), re-created empty at its ordinal;
- ``rolling``: rolling restarts;
- ``implementation_switch``: the in-place switch of spec.implementation, one bookie at a time;
- ``conditions``: Ready, Degraded, Progressing, Decommissioning;
- ``expansion``: online volume expansion, claim by claim;
- ``racks``: each bookie's rack from its node's zone;
- ``tls``: whether the certificates of ``spec.tls`` serve the bookies (CertificatesValid).
"""

from bookie_operator.decisions.compaction import CompactionAction, CompactionStep, compaction_tick, in_window
from bookie_operator.decisions.conditions import (
    ClusterConditions,
    ClusterFacts,
    ConditionValue,
    cluster_conditions,
    condition,
    held_by_user,
    invalid_spec_conditions,
    reconciling_conditions,
    set_condition,
    stalled_conditions,
)
from bookie_operator.decisions.decommission import (
    CANCELLABLE,
    UNREACHABLE_GRACE_S,
    DecommissionAction,
    DecommissionFacts,
    DecommissionStep,
    decommission_step,
    ordinal_to_decommission,
    start_decommission,
    statefulset_replicas,
)
from bookie_operator.decisions.expansion import plan_expansion
from bookie_operator.decisions.observed import GcInfo, ObservedBookie, iso, parse_time, sort_by_ordinal
from bookie_operator.decisions.read_only import (
    DISK_PREFIX,
    FORCED_GC_COOLDOWN,
    ReadOnlyDecision,
    ReadOnlyPlan,
    capped_scale_up,
    plan_read_only,
    scale_back_after_pressure,
    scale_up_for_pressure,
    should_force_gc,
)
from bookie_operator.decisions.rolling import pod_to_restart

__all__ = [
    "CANCELLABLE", "DISK_PREFIX", "FORCED_GC_COOLDOWN", "UNREACHABLE_GRACE_S", "ClusterConditions", "ClusterFacts",
    "CompactionAction", "CompactionStep", "ConditionValue", "DecommissionAction", "DecommissionFacts",
    "DecommissionStep", "GcInfo", "ObservedBookie", "ReadOnlyDecision", "ReadOnlyPlan", "capped_scale_up",
    "cluster_conditions", "compaction_tick", "condition", "decommission_step", "held_by_user", "in_window",
    "invalid_spec_conditions", "iso",
    "ordinal_to_decommission", "parse_time", "plan_expansion", "plan_read_only", "pod_to_restart",
    "reconciling_conditions", "scale_back_after_pressure", "scale_up_for_pressure", "set_condition",
    "should_force_gc", "sort_by_ordinal", "stalled_conditions", "start_decommission", "statefulset_replicas",
]
