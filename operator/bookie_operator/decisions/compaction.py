"""The compaction schedule: one run per fire time, bookies compacted one at a time, recorded in status."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass

from bookie_operator import cron
from bookie_operator.decisions.observed import GcInfo, iso, parse_time
from bookie_operator.models import CompactionRunStatus, CompactionSpec, CompactionStatus


class CompactionStep(enum.StrEnum):
    """What the reconcile does for one bookie of a compaction run."""

    TRIGGER = "trigger"       # start a forced compaction on the bookie
    FINISHED = "finished"     # the bookie reported its compaction finished: announce it
    TIMEOUT = "timeout"       # it did not finish within bookieTimeoutSeconds: announce, move on
    SKIPPED = "skipped"       # unreachable or without GC: announce, move on


@dataclass(frozen=True)
class CompactionAction:
    kind: CompactionStep
    ordinal: int
    message: str = ""


def compaction_tick(spec: CompactionSpec, status: CompactionStatus, ordinals: list[int],
                    gc_by_ordinal: dict[int, GcInfo | None], now: dt.datetime,
                    created: dt.datetime) -> tuple[CompactionStatus, list[CompactionAction], list[str]]:
    """Advance the compaction schedule one tick. Returns the new status, actions to perform, and notes.

    ``ordinals`` are the bookies a run covers; ``gc_by_ordinal`` holds those whose admin API answered. A bookie
    that is down when its turn comes is skipped; one that came up since the run started is compacted.

    A run due now (or missed by at most ``startingDeadlineSeconds``, e.g. while the operator was down) starts
    once, whatever the number of fire times it missed; older misses are counted and skipped. A due run with no
    reachable bookie waits for one until that deadline, then is skipped. A run compacts
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
        fire = cron.due_fire(spec.schedule, now, parse_time(status.last_schedule_time) or created,
                             spec.starting_deadline_seconds)
        reachable = [o for o in ordinals if gc_by_ordinal.get(o) is not None]
        if fire is not None and fire.in_time and not reachable:
            # No bookie to compact yet (a new cluster, or all restarting): the run waits for one until its
            # starting deadline rather than "completing" on none.
            fire = None
        elif fire is not None and fire.in_time:
            status.run = CompactionRunStatus(scheduled_for=iso(fire.at), pending=sorted(ordinals))
            notes.append(f"compaction run for {iso(fire.at)} started ({len(ordinals)} bookies)")
        elif fire is not None:
            status.missed_runs += 1
            why = "no bookie reachable" if not reachable else f"missed by {fire.late_seconds:.0f}s"
            notes.append(f"compaction run for {iso(fire.at)} skipped: {why} "
                         f"(> startingDeadlineSeconds {spec.starting_deadline_seconds})")
        if fire is not None:
            status.last_schedule_time = iso(fire.at)
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
                actions.append(CompactionAction(CompactionStep.FINISHED, run.active))
                run.done.append(run.active)
                run.active = None
            elif (now - since).total_seconds() > spec.bookie_timeout_seconds:
                actions.append(CompactionAction(CompactionStep.TIMEOUT, run.active,
                                                f"no finished compaction within {spec.bookie_timeout_seconds}s"))
                run.active = None
        if run.active is None:
            while run.pending:
                nxt = run.pending.pop(0)
                gc = gc_by_ordinal.get(nxt)
                if nxt not in ordinals or gc is None:
                    actions.append(CompactionAction(CompactionStep.SKIPPED, nxt,
                                                    "bookie unreachable or GC unavailable"))
                    continue
                run.active, run.active_since = nxt, iso(now)
                run.baseline_major, run.baseline_minor = gc.major_count, gc.minor_count
                run.baseline_time_ms = max(gc.last_major_ms, gc.last_minor_ms)
                actions.append(CompactionAction(CompactionStep.TRIGGER, nxt))
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
