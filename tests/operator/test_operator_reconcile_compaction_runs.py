"""The whole reconcile over a compaction schedule of every minute, without a cluster: a run starts at every
fire time, compacts the bookies one at a time, leaves no run in status between fire times, and each of its
transitions is announced by exactly one Event."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from tests.operator.fakes import World, cluster_spec


async def ready_world(compaction: dict[str, Any]) -> World:
    """Three running bookies (the clock starts at 02:47:30), then the schedule is set."""
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    await w.tick()
    w.kube.patch_spec("bk", {"compaction": compaction})
    return w


async def tick_until(w: World, done: Callable[[], bool], ticks: int = 30) -> None:
    for _ in range(ticks):
        await w.tick()
        if done():
            return
    raise AssertionError(f"not reached in {ticks} ticks: {w.status.get('compaction')}")


async def test_every_fire_time_runs_once_and_each_transition_is_announced_once() -> None:
    w = await ready_world(compaction={"schedule": "* * * * *", "bookieTimeoutSeconds": 50,
                                      "startingDeadlineSeconds": 50})
    schedule_times: list[str] = []
    idle_between_runs = 0
    for _ in range(12 * 4):                 # four minutes of ticks, every 5 s
        await w.tick()
        comp = w.status.get("compaction", {})
        if comp.get("lastScheduleTime") and comp["lastScheduleTime"] not in schedule_times:
            schedule_times.append(comp["lastScheduleTime"])
        if "run" not in comp and comp.get("lastCompletionTime", "") >= comp.get("lastScheduleTime", "~"):
            idle_between_runs += 1

    # 02:47 is due when the schedule is set (40 s late, within startingDeadlineSeconds).
    assert schedule_times == [f"2026-11-24T02:{m}:00Z" for m in range(47, 52)]
    assert idle_between_runs > 0
    notes = w.kube.reasons("CompactionSchedule")
    assert [n for n, c in collections.Counter(notes).items() if c > 1] == []
    for fire in schedule_times:
        assert f"compaction run for {fire} started (3 bookies)" in notes
        assert f"compaction run for {fire} completed on 3 bookies" in notes
    finished = collections.Counter(m.split(":")[0] for m in w.kube.reasons("CompactionFinished"))
    assert finished == {"bk-0": 5, "bk-1": 5, "bk-2": 5}
    assert [w.bookie(o).calls.count("trigger_gc") for o in range(3)] == [5, 5, 5]


async def test_a_run_in_progress_survives_an_operator_restart_without_repeating_a_bookie() -> None:
    w = await ready_world(compaction={"schedule": "* * * * *", "bookieTimeoutSeconds": 50})
    await tick_until(w, lambda: w.status.get("compaction", {}).get("run", {}).get("done") == [0])
    w.operator = w.new_operator()
    await tick_until(w, lambda: "run" not in w.status.get("compaction", {}))
    assert [w.bookie(o).calls.count("trigger_gc") for o in range(3)] == [1, 1, 1]
    assert len(w.kube.reasons("CompactionSchedule")) == 2
