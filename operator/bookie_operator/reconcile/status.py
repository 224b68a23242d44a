"""The last step: per-bookie status, counts, and the conditions decided by ``decisions.cluster_conditions``."""

from __future__ import annotations

import datetime as dt

from bookie_operator import builders, decisions, metrics
from bookie_operator.decisions import ClusterFacts, ObservedBookie, iso, retire, start_failures
from bookie_operator.models import BookieStatus
from bookie_operator.reconcile.context import Tick


def record_status(t: Tick) -> None:
    s = t.status
    s.bookies = [_bookie_status(t, b) for b in decisions.sort_by_ordinal(t.bookies) if b.exists]
    for b in s.bookies:
        if b.disk_used_fraction is not None:
            metrics.DISK_USED.labels(t.namespace, t.name, b.pod).set(b.disk_used_fraction)
    ready = sum(1 for b in t.bookies if b.exists and b.ready)
    writable = sum(1 for b in s.bookies if b.state == "Writable" and b.ready)
    metrics.WRITABLE.labels(t.namespace, t.name).set(writable)
    s.replicas = sum(1 for b in t.bookies if b.exists)
    s.ready_replicas = ready
    s.writable_bookies = writable
    s.label_selector = builders.label_selector(t.name)
    s.config_checksum = builders.config_checksum(t.spec, t.layout)
    s.observed_generation = t.generation

    sts = t.statefulset
    revision = (sts or {}).get("status", {}).get("updateRevision")
    facts = ClusterFacts(
        desired_replicas=t.desired_replicas, ensemble_size=t.spec.ensemble_size, existing=s.replicas, ready=ready,
        writable=writable,
        scaling=t.replicas != t.desired_replicas or bool(sts and int(sts["spec"]["replicas"]) != t.replicas),
        outdated=[b.pod for b in t.bookies if b.exists and revision and b.revision != revision],
        compaction_run=s.compaction.run.scheduled_for if s.compaction.run else None,
        decommission=s.decommission,
        chosen_decommissions=[r for r in s.decommission_requests if r.phase in retire.ACTIVE],
        unregistered=[b.pod for b in t.bookies if b.exists and t.registered is not None
                      and b.bookie_id not in t.registered],
        under_replicated=t.under_replicated, problems=t.problems, problem_reason=t.failure_reason,
        held=decisions.held_by_user(s.implementation_switch, s.rebalance))
    verdict = decisions.cluster_conditions(facts)
    for c in verdict.conditions:
        t.condition(c.type, c.status, c.reason, c.message)
    for what in verdict.waiting:
        t.wait(what)


def _bookie_status(t: Tick, b: ObservedBookie) -> BookieStatus:
    previous = next((p for p in t.previous.bookies if p.ordinal == b.ordinal), None)
    d = t.plan.decisions.get(b.ordinal)
    reason: str | None = None
    if d is not None and d.read_only:
        reason = d.reason
    elif b.read_only:
        reason = "bookie: switched itself to read-only (operator re-asserting writable)"
    read_only = d.read_only if d else b.read_only
    state = "Unknown" if b.read_only is None else ("ReadOnly" if read_only else "Writable")
    last_ms = max(b.gc.last_major_ms, b.gc.last_minor_ms) if b.gc else 0
    used = b.used_fraction
    return BookieStatus(
        pod=b.pod, ordinal=b.ordinal, bookie_id=b.bookie_id, ready=b.ready, state=state,  # type: ignore[arg-type]
        read_only_reason=reason,
        unknown_reason=b.unknown_reason if state == "Unknown" and b.exists else None,
        disk_used_fraction=round(used, 3) if used is not None else None,
        disk_total_bytes=b.total_bytes,
        last_compaction_time=_time_of(last_ms),
        next_compaction_time=t.status.compaction.next_schedule_time,
        major_compactions=b.gc.major_count if b.gc else None,
        minor_compactions=b.gc.minor_count if b.gc else None,
        forced_gc_at=t.forced.get(b.ordinal) or (previous.forced_gc_at if previous else None),
        start_failure=start_failures.status_of(t.start_failures[b.ordinal], previous, iso(t.now))
        if b.ordinal in t.start_failures else None,
        rack=t.racks.get(b.ordinal))


def _time_of(ms: int) -> str | None:
    """A compaction time from a bookie; None when there was none, or it is not a representable time (the admin
    client checks the range: this keeps the status step safe whatever reaches it)."""
    if ms <= 0:
        return None
    try:
        return iso(dt.datetime.fromtimestamp(ms / 1000, dt.UTC))
    except (OverflowError, ValueError, OSError):
        return None
