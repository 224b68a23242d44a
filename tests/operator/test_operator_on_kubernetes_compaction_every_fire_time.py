"""A compaction schedule fires a run at every fire time, not only the first: with a schedule of every minute,
two runs in a row complete, ``lastScheduleTime`` advances with each, ``status.compaction.run`` is absent
between runs, and each transition is announced by one Event, never re-announced on later ticks."""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import time
from collections.abc import Callable

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import OperatorProcess, bookie_cluster, events, get_cluster, patch_spec, wait_ready
from tests.support.kube import KubeTarget

RUNS = 2


def test_every_fire_time_starts_a_run_and_each_run_is_announced_once(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root,
                              gc={"gcWaitTimeSeconds": 3600, "minorCompactionIntervalSeconds": 3600,
                                  "majorCompactionIntervalSeconds": 86400},
                              compaction={"schedule": "* * * * *", "bookieTimeoutSeconds": 45,
                                          "startingDeadlineSeconds": 50}), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    # Runs that fired while the bookies were starting cover only those up by their turn: count the later ones.
    ready_at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    completed: dict[str, str] = {}          # lastScheduleTime -> lastCompletionTime of each finished run
    idle_without_run: set[str] = set()      # runs after which status showed no run before the next started
    deadline = time.monotonic() + 60 * (RUNS + 3.5)
    while len(idle_without_run) < RUNS and time.monotonic() < deadline:
        comp = get_cluster(kube, ns, "bk")["status"].get("compaction", {})
        scheduled, finished = comp.get("lastScheduleTime"), comp.get("lastCompletionTime")
        if scheduled and finished and scheduled > ready_at and finished >= scheduled and "run" not in comp:
            completed.setdefault(scheduled, finished)
            idle_without_run.add(scheduled)
        time.sleep(1)
    patch_spec(kube, ns, "bk", {"compaction": {"schedule": None}})   # no new run while the Events are counted
    time.sleep(6)                                                      # a few more ticks (2 s interval)

    assert len(idle_without_run) >= RUNS, f"only {sorted(completed)} completed in {RUNS + 3.5} minutes"
    fire_times = sorted(completed)
    assert all(b > a for a, b in itertools.pairwise(fire_times)), fire_times

    notes = [e["message"] for e in events(kube, ns, "bk", "CompactionSchedule")]
    repeated = [m for m, n in collections.Counter(notes).items() if n > 1]
    assert not repeated, f"announced more than once: {repeated}"
    started = [m for m in notes if m.endswith("started (3 bookies)")]
    done = [m for m in notes if "completed on" in m]
    assert len(done) >= RUNS and len(started) - len(done) <= 1
    for fire in fire_times:
        assert f"compaction run for {fire} completed on 3 bookies" in notes
    finished_per_bookie = collections.Counter(e["message"].split(":")[0]
                                              for e in events(kube, ns, "bk", "CompactionFinished"))
    assert all(n <= len(started) for n in finished_per_bookie.values()), finished_per_bookie
    # Per run: started, three bookies started and finished, completed; plus the cluster's creation.
    ours = [e for e in events(kube, ns, "bk") if e["involvedObject"]["kind"] == "BookieCluster"]
    assert len(ours) <= 12 + 8 * len(started), collections.Counter(e["reason"] for e in ours)
