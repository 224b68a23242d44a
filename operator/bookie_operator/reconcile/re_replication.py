"""Re-replication suspended while the operator restarts bookies on purpose (``status.reReplicationSuspended``).

Runs before the steps that restart pods (the implementation switch, the rolling restart and so the adoption
roll): it gathers the facts, asks ``decisions.re_replication`` and disables or enables BookKeeper's replication
before any pod is deleted. When the suspension is needed but not in place, ``t.restart_hold`` says why and those
steps restart nothing this tick.
"""

from __future__ import annotations

from bookie_operator.decisions import re_replication as decide
from bookie_operator.decisions.re_replication import ReplicationAction, ReplicationFacts
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.observe import observe_under_replication
from bookie_operator.zk import MetadataError


async def suspend_re_replication(t: Tick) -> None:
    state = t.status.re_replication_suspended
    restart, stopped = decide.planned_restart(
        t.status.implementation_switch, t.status.decommission is not None, _outdated(t),
        t.status.adoption is not None and t.status.adoption.phase == "Rolling", t.spec.implementation_switch.paused)
    # Read every tick, even with nothing under way: an operator that died between disabling replication and
    # recording it left its marker, which this finds and lifts.
    own = decide.marker(t.namespace, t.name, t.uid)
    try:
        metadata = await t.cluster_metadata()
        switch: decide.Switch | None = decide.read_switch(await metadata.replication_disabled_by(), own)
        registered = await metadata.registered_bookies() if restart or state else None
    except MetadataError as exc:
        t.wait(f"ZooKeeper (re-replication switch): {exc}")
        switch, registered = None, None
    if t.under_replicated is None and (restart or state) and switch is not None:
        t.under_replicated = await observe_under_replication(t)
    facts = ReplicationFacts(restart=restart, stopped=stopped,
                             settled=decide.settled(t.bookies, t.replicas, registered),
                             under_replicated=t.under_replicated, switch=switch)
    step = decide.re_replication_step(state, facts, t.now)
    if not await _act(t, step.action, own):
        return
    t.status.re_replication_suspended = step.status
    t.restart_hold = step.hold
    if step.event is not None:
        t.event("Normal", *step.event)


async def _act(t: Tick, action: ReplicationAction, own: bytes) -> bool:
    """Perform the action; False (restarts held, status unchanged) when ZooKeeper refused it."""
    if action is ReplicationAction.NONE:
        return True
    try:
        metadata = await t.cluster_metadata()
        if action is ReplicationAction.DISABLE:
            await metadata.disable_replication_as(own)
        else:
            await metadata.enable_replication_of(own)
    except MetadataError as exc:
        t.restart_hold = f"re-replication to be {action.value}d in ZooKeeper ({exc})"
        t.wait(t.restart_hold)
        return False
    return True


def _outdated(t: Tick) -> bool:
    """Pods the rolling restart will restart: not on the StatefulSet's update revision."""
    revision = ((t.statefulset or {}).get("status") or {}).get("updateRevision")
    return revision is not None and any(b.exists and b.revision != revision for b in t.bookies)
