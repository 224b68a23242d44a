"""The whole reconcile through a change of spec.implementation, without a cluster: the bookies are switched one
at a time (highest ordinal first) on their own pods' volumes, each pod deleted exactly once even when the
operator dies in any phase after acting and before writing its status; the ConfigMap meanwhile is one both
implementations read; pausing holds it, under-replicated ledgers hold it, a bookie that cannot start on the target
stops it with a Degraded condition naming the pod, and setting the implementation back rolls back."""

from __future__ import annotations

import collections
from typing import Any

import pytest
from bookie_operator import builders

from tests.operator.fakes import NS, OperatorCrashed, World, cluster_spec

JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
OURS = {"implementation": "bookie-fleet", "image": "bookie-fleet/bookie:0.1.0"}
CONFIG = {"flushInterval": 1000, "journalSyncData": False}     # keys both implementations know


async def java_world() -> World:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(config=CONFIG, **JAVA))
    await w.tick()
    await w.tick()
    assert implementations(w) == ["apache-bookkeeper"] * 3
    return w


def implementations(w: World) -> list[str]:
    w.statefulsets.settle("bk")       # the StatefulSet controller has recreated the deleted pods
    return [w.kube.objects[("Pod", NS, builders.pod_name("bk", i))]["metadata"]["labels"][builders.IMPLEMENTATION_LABEL]
            for i in range(3)]


def switch(w: World) -> dict[str, Any]:
    return dict(w.status.get("implementationSwitch") or {})


def pod_deletions(w: World) -> list[str]:
    return [d.removeprefix("Pod/") for d in w.kube.deleted if d.startswith("Pod/")]


async def tick(w: World) -> None:
    try:
        await w.tick()
    except OperatorCrashed:
        w.operator = w.new_operator()


async def run_to_end(w: World, crash_in: str | None = None, limit: int = 40) -> list[str]:
    """Tick until the switch is over; returns the phases seen. ``crash_in``: in the first tick that starts in
    that phase (each time it is entered), the operator dies after its actions and before its status write."""
    seen: list[str] = []
    for _ in range(limit):
        phase = switch(w).get("phase")
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
            if phase == crash_in:
                w.kube.crash_before_status_write = True
        await tick(w)
        if seen and not switch(w):
            return seen
    raise AssertionError(f"the switch did not finish: {switch(w)}")


@pytest.mark.parametrize("crash_in", [None, "Waiting", "Restarting"])
async def test_a_switch_restarts_each_bookie_once_highest_first_and_resumes_after_a_crash(crash_in: str | None) \
        -> None:
    w = await java_world()
    cookies = set(w.zk.cookies)
    w.kube.patch_spec("bk", OURS)
    seen = await run_to_end(w, crash_in)

    assert set(seen) <= {"Waiting", "Restarting"} and "Restarting" in seen
    assert pod_deletions(w) == ["bk-2", "bk-1", "bk-0"]          # each exactly once, in order
    assert implementations(w) == ["bookie-fleet"] * 3
    assert w.zk.cookies == cookies                                  # no bookie id is new, no cookie deleted
    assert len(w.kube.reasons("ImplementationSwitchStarted")) == 1
    assert len(w.kube.reasons("ImplementationSwitched")) == 1
    assert w.kube.reasons("RollingRestart") == []                   # the switch did it, nobody else
    await w.tick()
    configmap = w.kube.objects[("ConfigMap", NS, "bk-config")]["data"]
    assert set(configmap) == {"bk_server.conf"}                     # back to ours alone once finished


async def test_while_a_switch_runs_the_configmap_and_service_serve_both_implementations() -> None:
    w = await java_world()
    w.kube.patch_spec("bk", OURS)
    await w.tick()
    assert switch(w)["source"] == "apache-bookkeeper"
    data = w.kube.objects[("ConfigMap", NS, "bk-config")]["data"]
    conf = data["bk_server.conf"]
    # Java's bookies not yet switched keep DbLedgerStorage and their inspector; ours get their token file.
    assert "ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage" in conf
    assert "httpServerAuthTokenFile=" in conf and "httpServerClass=org.apache.bookkeeper.http.vertx" in conf
    assert "inspector.conf" in data
    service = w.kube.objects[("Service", NS, "bk-headless")]
    assert "inspector" in {p["name"] for p in service["spec"]["ports"]}     # the Java bookies' inspectors


async def test_a_switch_waits_for_under_replicated_ledgers_and_says_so() -> None:
    w = await java_world()
    w.zk.under_replicated_ledgers = 3
    w.kube.patch_spec("bk", OURS)
    for _ in range(5):
        await w.tick()
    assert pod_deletions(w) == []
    assert switch(w)["message"] == "no under-replicated ledgers before the next switch (3 now)"
    w.zk.under_replicated_ledgers = 0
    await run_to_end(w)
    assert pod_deletions(w) == ["bk-2", "bk-1", "bk-0"]


async def test_a_paused_switch_holds_before_its_next_bookie_and_resumes() -> None:
    w = await java_world()
    w.kube.patch_spec("bk", OURS)
    while pod_deletions(w) != ["bk-2"]:
        await w.tick()
    w.kube.patch_spec("bk", {"implementationSwitch": {"paused": True}})
    for _ in range(5):
        await w.tick()
    assert pod_deletions(w) == ["bk-2"] and switch(w)["phase"] == "Paused"
    assert implementations(w) == ["apache-bookkeeper", "apache-bookkeeper", "bookie-fleet"]
    w.kube.patch_spec("bk", {"implementationSwitch": {"paused": False}})
    await run_to_end(w, crash_in="Paused")
    assert pod_deletions(w) == ["bk-2", "bk-1", "bk-0"]


async def test_setting_the_implementation_back_mid_way_rolls_the_switched_bookies_back() -> None:
    w = await java_world()
    w.kube.patch_spec("bk", OURS)
    while implementations(w) != ["apache-bookkeeper", "bookie-fleet", "bookie-fleet"]:
        await w.tick()
    w.kube.patch_spec("bk", JAVA)
    await run_to_end(w, crash_in="Restarting")
    assert implementations(w) == ["apache-bookkeeper"] * 3
    assert pod_deletions(w) == ["bk-2", "bk-1", "bk-2", "bk-1"]     # bk-0 never left Java
    assert len(w.kube.reasons("ImplementationSwitchReversed")) == 1


def fail_to_start(w: World, ordinal: int, message: str) -> None:
    pod = w.kube.objects[("Pod", NS, builders.pod_name("bk", ordinal))]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod["status"]["containerStatuses"] = [{"name": "bookie", "ready": False, "restartCount": 2, "lastState": {
        "terminated": {"exitCode": 1, "message": message, "finishedAt": "2026-11-24T02:50:00Z"}}}]


async def test_a_bookie_that_cannot_start_on_the_target_stops_the_switch_until_it_is_set_back() -> None:
    w = await java_world()
    w.kube.patch_spec("bk", OURS)
    while pod_deletions(w) != ["bk-2"]:
        await w.tick()
    w.statefulsets.settle("bk")
    fail_to_start(w, 2, "IncompatibleDisk: /bookie/ledgers-0: a table this bookie cannot open")
    crashed = False
    for _ in range(6):
        if switch(w).get("phase") == "Failed" and not crashed:   # dies at its next status write
            w.kube.crash_before_status_write = crashed = True
        await tick(w)
    assert crashed
    state = switch(w)
    assert state["phase"] == "Failed" and state["current"] == 2
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and "bk-2 cannot start on bookie-fleet (IncompatibleDisk" in degraded["message"]
    assert pod_deletions(w) == ["bk-2"]                              # bk-1 and bk-0 left as they were
    assert collections.Counter(r for _, r, _ in w.kube.events)["ImplementationSwitchFailed"] == 1

    w.kube.patch_spec("bk", JAVA)
    await run_to_end(w)
    assert implementations(w) == ["apache-bookkeeper"] * 3
    assert pod_deletions(w) == ["bk-2", "bk-2"]
