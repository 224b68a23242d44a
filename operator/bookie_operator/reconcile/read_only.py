"""Read-only control from disk usage (with the ensemble floor) and forced GC above the force-compaction ratio."""

from __future__ import annotations

import logging

from bookie_operator import builders, decisions, metrics
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.decisions import iso, parse_time
from bookie_operator.reconcile.context import Tick

log = logging.getLogger("bookie_operator.reconcile")


async def control_read_only(t: Tick) -> None:
    previous = {b.ordinal: b.read_only_reason for b in t.previous.bookies}
    t.plan = decisions.plan_read_only(t.bookies, t.spec.disk_policy, t.spec.ensemble_size, previous,
                                      t.decommissioning)
    for b in t.bookies:
        d = t.plan.decisions.get(b.ordinal)
        if d is not None and b.held_read_only is not None and previous.get(b.ordinal) != d.reason:
            t.event("Warning", "BookieHeldReadOnly", f"{b.pod} keeps itself read-only ({b.held_read_only}); "
                    f"the operator will not ask it to be writable: see the bookie's log and docs/operator.md")
        if d is None or b.ordinal == t.decommissioning or b.read_only == d.read_only:
            continue
        try:
            await t.admins[b.ordinal].set_read_only(d.read_only)
        except BookieApiError as exc:
            t.event("Warning", "ReadOnlyChangeFailed", f"{b.pod}: {exc}")
            continue
        metrics.READ_ONLY_CHANGES.labels("read-only" if d.read_only else "writable").inc()
        if d.read_only:
            t.event("Normal", "BookieReadOnly", f"{b.pod} set read-only: {d.reason}")
        elif (previous.get(b.ordinal) or "").startswith("operator:"):
            t.event("Normal", "BookieWritable", f"{b.pod} set writable again: disk {(b.used_fraction or 0):.0%} "
                    f"below low-water mark {t.spec.disk_policy.writable_low_water_mark:.0%}")
        else:
            log.info("re-asserted writable cluster=%s/%s pod=%s (the bookie had switched itself to read-only)",
                     t.namespace, t.name, b.pod)
    _disk_pressure_condition(t)


def _disk_pressure_condition(t: Tick) -> None:
    if t.plan.disk_pressure:
        held = ", ".join(builders.pod_name(t.name, o) for o in t.plan.held_writable)
        message = (f"{held} above the high-water mark kept writable: at least ensembleSize "
                   f"{t.spec.ensemble_size} bookies must stay writable")
        if t.was("DiskPressure") != "True" or t.previous_message("DiskPressure") != message:
            t.event("Warning", "DiskPressure", message)
        t.condition("DiskPressure", True, "TooFewWritableBookies", message)
        return
    read_only = [builders.pod_name(t.name, o) for o, d in sorted(t.plan.decisions.items())
                 if d.read_only and (d.reason or "").startswith(decisions.DISK_PREFIX)]
    if read_only:
        t.condition("DiskPressure", True, "BookiesReadOnly", f"read-only for disk usage: {', '.join(read_only)}")
    else:
        t.condition("DiskPressure", False, "DiskUsageNormal", "")


async def force_gc(t: Tick) -> None:
    last = {b.ordinal: parse_time(b.forced_gc_at) for b in t.previous.bookies}
    for b in t.bookies:
        if b.gc is None or not decisions.should_force_gc(b, t.spec.disk_policy, last.get(b.ordinal), t.now):
            continue
        try:
            await t.admins[b.ordinal].trigger_gc(force_major=True, force_minor=True)
        except BookieApiError as exc:
            log.warning("forced GC failed cluster=%s/%s pod=%s: %s", t.namespace, t.name, b.pod, exc)
            continue
        t.forced[b.ordinal] = iso(t.now)
        metrics.FORCED_GCS.labels("disk-usage").inc()
        t.event("Normal", "ForcedGC", f"{b.pod}: disk {(b.used_fraction or 0):.0%} >= force-compaction ratio "
                f"{t.spec.disk_policy.force_compaction_ratio:.0%}, forced GC triggered")
