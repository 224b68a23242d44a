"""The one idempotent reconcile of a BookieCluster, as a chain of named steps over one ``Tick``.

Called by Kopf from create/update/resume and from a timer, so the actual state is re-read every tick
(level-based). Each step is a module of this package with one concern; decisions are pure functions in
``bookie_operator.decisions``. What the tick waits for is returned (``Outcome.waiting``); the Kopf handler
turns it into ``kopf.TemporaryError``.
"""

from __future__ import annotations

from bookie_operator import metrics, models
from bookie_operator.reconcile.admin_token import ensure_admin_token
from bookie_operator.reconcile.adopt import adopt
from bookie_operator.reconcile.apply import apply_desired
from bookie_operator.reconcile.audit import run_audit_schedule
from bookie_operator.reconcile.compaction import apply_compaction_window, run_compaction_schedule
from bookie_operator.reconcile.context import Operator, Outcome, Tick
from bookie_operator.reconcile.data_loss import give_up_lost_entries
from bookie_operator.reconcile.decommission import decommission
from bookie_operator.reconcile.expansion import expand_volumes
from bookie_operator.reconcile.implementation_switch import begin_implementation_switch, switch_implementation
from bookie_operator.reconcile.observe import ensure_metadata, observe, observe_registrations, parse_spec
from bookie_operator.reconcile.ports import Obj
from bookie_operator.reconcile.racks import publish_racks
from bookie_operator.reconcile.re_replication import suspend_re_replication
from bookie_operator.reconcile.read_only import control_read_only, force_gc
from bookie_operator.reconcile.rebalance import rebalance
from bookie_operator.reconcile.retire import decommission_chosen
from bookie_operator.reconcile.rolling import roll_outdated_pods, scale_for_disk_pressure
from bookie_operator.reconcile.start_failures import reclaim_foreign_volumes, report_start_failures
from bookie_operator.reconcile.status import record_status
from bookie_operator.reconcile.tls import check_certificates


async def steps(t: Tick) -> None:
    if not await parse_spec(t):          # an invalid spec: a condition and an Event, nothing applied
        return
    if not await adopt(t):               # spec.adopt: nothing applied before the take-over is approved
        return
    if not await ensure_metadata(t):     # BookKeeper's metadata layout, created once
        return
    if not await ensure_admin_token(t):  # the admin API's token Secret, created once unless the spec names one
        return
    await check_certificates(t)          # spec.tls: do the Secrets' certificates serve these bookies?
    await observe(t)                     # StatefulSet, pods, each bookie's state, disk and GC
    await reclaim_foreign_volumes(t)     # only with the explicit opt-in, another instance's claims
    await give_up_lost_entries(t)        # a dead bookie's unrecoverable ledgers: listed, given up once named
    await decommission(t)                # scale-down: the resumable state machine in status.decommission
    await decommission_chosen(t)         # spec.decommission: chosen bookies re-created empty, one at a time
    begin_implementation_switch(t)       # spec.implementation changed: status.implementationSwitch
    await apply_desired(t)               # ConfigMap, Services, PDB, NetworkPolicy, StatefulSet
    await expand_volumes(t)              # larger spec.storage sizes: each claim patched and followed
    await control_read_only(t)           # read-only from disk usage, with the ensemble floor
    await force_gc(t)                    # forced GC above the force-compaction ratio
    await run_compaction_schedule(t)     # scheduled compaction, one bookie at a time
    await apply_compaction_window(t)     # the bookies' own compaction only inside the window
    await run_audit_schedule(t)          # the storage audit: Spark runs, their findings in status.audit
    await suspend_re_replication(t)      # re-replication off while bookies are restarted on purpose, then back
    await switch_implementation(t)       # one bookie at a time onto the other implementation, same volumes
    await rebalance(t)                   # spec.rebalance: replica moves from the fullest bookies to the emptiest
    await roll_outdated_pods(t)          # one outdated pod at a time
    await scale_for_disk_pressure(t)     # status.scaledUpBy: one more bookie under pressure, or one fewer
    await observe_registrations(t)       # which bookies ZooKeeper knows
    await publish_racks(t)               # each bookie's zone, as its rack in /bookies
    report_start_failures(t)             # bookies that cannot start: why, and what to do
    record_status(t)                     # per-bookie status and conditions


async def reconcile(op: Operator, body: Obj) -> Outcome:
    uid = body["metadata"].get("uid", body["metadata"]["name"])
    with metrics.RECONCILE_SECONDS.time():
        async with op.lock(uid):
            # Level-based: the object as it is now, not the (possibly older) copy an event or timer carried,
            # so a status written by the previous tick is never acted on twice.
            fresh = await op.kube.get(models.KIND, body["metadata"]["namespace"], body["metadata"]["name"])
            if fresh is None or fresh["metadata"].get("uid") != body["metadata"].get("uid"):
                return Outcome()
            tick = Tick(op, fresh)
            try:
                await steps(tick)
                metrics.RECONCILES.labels("waiting" if tick.outcome.waiting else "done").inc()
            except Exception:
                metrics.RECONCILES.labels("error").inc()
                raise
            finally:
                await tick.flush()
            return tick.outcome


__all__ = ["Operator", "Outcome", "Tick", "reconcile", "steps"]
