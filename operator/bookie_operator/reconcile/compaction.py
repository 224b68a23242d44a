"""The compaction schedule (one bookie at a time, recorded in ``status.compaction``) and the daily window in
which the bookies' own compaction may run."""

from __future__ import annotations

from typing import assert_never

from bookie_operator import builders, decisions, metrics
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.decisions import CompactionAction, CompactionStep
from bookie_operator.models import CompactionStatus
from bookie_operator.reconcile.context import Tick


async def run_compaction_schedule(t: Tick) -> None:
    ordinals = [b.ordinal for b in t.bookies if b.ordinal != t.decommissioning]
    gc = {b.ordinal: b.gc for b in t.bookies if b.reachable}
    status, actions, notes = decisions.compaction_tick(t.spec.compaction, t.status.compaction, ordinals, gc, t.now,
                                                       t.created)
    # The notes are the run's transitions (started, skipped, completed): each happens in exactly one tick.
    for note in notes:
        t.event("Warning" if "skipped" in note else "Normal", "CompactionSchedule", note)
    for action in actions:
        await _perform(t, action, status)
    t.status.compaction = status


async def _perform(t: Tick, action: CompactionAction, status: CompactionStatus) -> None:
    pod = builders.pod_name(t.name, action.ordinal)
    match action.kind:
        case CompactionStep.TRIGGER:
            try:
                await t.admins[action.ordinal].trigger_gc(t.spec.compaction.force_major,
                                                          t.spec.compaction.force_minor)
                t.event("Normal", "CompactionStarted", f"{pod}: scheduled forced compaction started")
            except (BookieApiError, KeyError) as exc:
                t.event("Warning", "CompactionFailed", f"{pod}: {exc}")
                if status.run is not None:
                    status.run.active = None
                metrics.COMPACTIONS.labels("failed").inc()
        case CompactionStep.FINISHED:
            metrics.COMPACTIONS.labels("finished").inc()
            t.event("Normal", "CompactionFinished", f"{pod}: scheduled forced compaction finished")
        case CompactionStep.TIMEOUT:
            metrics.COMPACTIONS.labels("timeout").inc()
            t.event("Warning", "CompactionTimeout", f"{pod}: {action.message}")
        case CompactionStep.SKIPPED:
            metrics.COMPACTIONS.labels("skipped").inc()
            t.event("Warning", "CompactionSkipped", f"{pod}: {action.message}")
        case _:
            assert_never(action.kind)


async def apply_compaction_window(t: Tick) -> None:
    """Outside the window the bookies' own compaction is suspended (GC of whole logs still runs)."""
    window = t.spec.gc.window
    if window is None:
        return
    inside = decisions.in_window(window.start, window.end, t.now)
    for b in t.bookies:
        if b.gc is not None:
            try:
                await t.admins[b.ordinal].suspend_compaction(not inside)
            except BookieApiError:
                continue
