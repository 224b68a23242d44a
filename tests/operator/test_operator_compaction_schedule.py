"""Scheduled forced compactions: due and missed runs, one bookie at a time, recorded in status."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from bookie_operator.decisions import CompactionAction, GcInfo, compaction_tick, in_window, iso
from bookie_operator.models import CompactionStatus

from tests.operator.helpers import NOW, gc, spec

HOURLY = spec(compaction={"schedule": "0 * * * *", "startingDeadlineSeconds": 600,
                          "bookieTimeoutSeconds": 300}).compaction
CREATED = NOW - dt.timedelta(days=1)


def tick(status: CompactionStatus, now: dt.datetime, gcs: Mapping[int, GcInfo | None],
         ordinals: list[int] | None = None) -> tuple[CompactionStatus, list[CompactionAction], list[str]]:
    return compaction_tick(HOURLY, status, ordinals if ordinals is not None else sorted(gcs), dict(gcs), now, CREATED)


def test_nothing_runs_between_fire_times_and_the_next_one_is_announced() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW))
    new, actions, _ = tick(status, NOW + dt.timedelta(minutes=30), {0: gc()})
    assert actions == [] and new.run is None
    assert new.next_schedule_time == "2026-11-22T13:00:00Z"


def test_a_due_run_compacts_bookies_one_at_a_time_in_ordinal_order() -> None:
    gcs = {0: gc(major=4), 1: gc(major=7), 2: gc()}
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=1)))
    status, actions, notes = tick(status, NOW + dt.timedelta(seconds=5), gcs)
    assert [(a.kind, a.ordinal) for a in actions] == [("trigger", 0)]
    assert status.run is not None and status.run.pending == [1, 2] and status.run.baseline_major == 4
    assert status.last_schedule_time == "2026-11-22T12:00:00Z" and "started" in notes[0]

    # Still compacting: bookie 1 waits.
    status, actions, _ = tick(status, NOW + dt.timedelta(seconds=30), {**gcs, 0: gc(major=4, running=True)})
    assert actions == [] and status.run is not None and status.run.active == 0

    # Bookie 0 finished (its counter moved): bookie 1 starts.
    status, actions, _ = tick(status, NOW + dt.timedelta(seconds=60), {**gcs, 0: gc(major=5)})
    assert [(a.kind, a.ordinal) for a in actions] == [("finished", 0), ("trigger", 1)]
    assert status.run is not None and status.run.done == [0]

    status, actions, _ = tick(status, NOW + dt.timedelta(seconds=90), {0: gc(major=5), 1: gc(major=8), 2: gc()})
    assert [(a.kind, a.ordinal) for a in actions] == [("finished", 1), ("trigger", 2)]
    status, actions, notes = tick(status, NOW + dt.timedelta(seconds=120),
                                  {0: gc(major=5), 1: gc(major=8), 2: gc(minor=1)})
    assert [(a.kind, a.ordinal) for a in actions] == [("finished", 2)]
    assert status.run is None and status.last_completion_time == iso(NOW + dt.timedelta(seconds=120))
    assert "completed on 3 bookies" in notes[-1]


def test_a_run_missed_by_more_than_the_deadline_is_skipped_and_counted() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=5)))
    new, actions, notes = tick(status, NOW + dt.timedelta(minutes=20), {0: gc()})
    assert actions == [] and new.run is None and new.missed_runs == 1
    assert new.last_schedule_time == iso(NOW) and "skipped" in notes[0]


def test_after_an_operator_restart_many_missed_fire_times_give_one_run() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=5)))
    new, actions, _ = tick(status, NOW + dt.timedelta(minutes=3), {0: gc(), 1: gc()})
    assert [(a.kind, a.ordinal) for a in actions] == [("trigger", 0)]
    assert new.run is not None and new.run.scheduled_for == iso(NOW)


def test_a_bookie_without_counters_is_finished_when_its_last_compaction_time_moves() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=1)))
    before = GcInfo(in_force_gc=False, compacting=False, major_count=0, minor_count=0, last_major_ms=1000,
                    last_minor_ms=1000)
    status, _, _ = tick(status, NOW, {0: before})
    after = GcInfo(in_force_gc=False, compacting=False, major_count=0, minor_count=0, last_major_ms=5000,
                   last_minor_ms=5000)
    status, actions, _ = tick(status, NOW + dt.timedelta(seconds=5), {0: after})
    assert [(a.kind, a.ordinal) for a in actions] == [("finished", 0)] and status.run is None


def test_a_new_cluster_does_not_run_schedules_from_before_it_existed() -> None:
    new, actions, _ = compaction_tick(HOURLY, CompactionStatus(), [0], {0: gc()}, NOW + dt.timedelta(minutes=3),
                                      NOW + dt.timedelta(minutes=1))
    assert actions == [] and new.run is None


def test_a_bookie_that_does_not_finish_times_out_and_the_run_goes_on() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=1)))
    status, _, _ = tick(status, NOW, {0: gc(), 1: gc()})
    status, actions, _ = tick(status, NOW + dt.timedelta(seconds=301), {0: gc(running=True), 1: gc()})
    assert [(a.kind, a.ordinal) for a in actions] == [("timeout", 0), ("trigger", 1)]


def test_unreachable_bookies_are_skipped() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=1)))
    status, actions, _ = tick(status, NOW, {0: None, 1: gc()}, ordinals=[0, 1])
    assert [(a.kind, a.ordinal) for a in actions] == [("skipped", 0), ("trigger", 1)]


def test_removing_the_schedule_clears_the_next_time() -> None:
    off = spec().compaction
    new, actions, _ = compaction_tick(off, CompactionStatus(next_schedule_time="x", last_schedule_time="y"), [0],
                                      {0: gc()}, NOW, CREATED)
    assert actions == [] and new.next_schedule_time is None and new.last_schedule_time == "y"


def test_compaction_window_spans_midnight() -> None:
    at = dt.datetime(2026, 1, 1, 23, 30, tzinfo=dt.UTC)
    assert in_window("22:00", "04:00", at) and in_window("22:00", "04:00", at.replace(hour=3))
    assert not in_window("22:00", "04:00", at.replace(hour=12))
    assert in_window("01:00", "05:00", at.replace(hour=1, minute=0))
    assert not in_window("01:00", "05:00", at.replace(hour=5, minute=0))


def test_a_run_due_before_any_bookie_is_up_waits_for_one_until_its_deadline() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=1)))
    none_up = {0: None, 1: None, 2: None}
    waiting, actions, notes = tick(status, NOW + dt.timedelta(seconds=5), none_up)
    assert actions == [] and notes == [] and waiting.run is None
    assert waiting.last_schedule_time == status.last_schedule_time      # still due

    late, actions, notes = tick(waiting, NOW + dt.timedelta(minutes=20), none_up)
    assert actions == [] and late.run is None and late.missed_runs == 1
    assert late.last_schedule_time == iso(NOW) and "skipped: no bookie reachable" in notes[0]


def test_a_run_covers_the_bookies_that_come_up_before_their_turn() -> None:
    status = CompactionStatus(last_schedule_time=iso(NOW - dt.timedelta(hours=1)))
    status, actions, notes = tick(status, NOW + dt.timedelta(seconds=90), {0: gc(), 1: None, 2: None})
    assert [(a.kind, a.ordinal) for a in actions] == [("trigger", 0)] and "started (3 bookies)" in notes[0]
    status, actions, _ = tick(status, NOW + dt.timedelta(seconds=120), {0: gc(major=1), 1: gc(), 2: None})
    assert [(a.kind, a.ordinal) for a in actions] == [("finished", 0), ("trigger", 1)]
    status, actions, notes = tick(status, NOW + dt.timedelta(seconds=150), {0: gc(major=1), 1: gc(major=1), 2: None})
    assert [(a.kind, a.ordinal) for a in actions] == [("finished", 1), ("skipped", 2)]
    assert status.run is None and "completed on 2 bookies" in notes[-1]
