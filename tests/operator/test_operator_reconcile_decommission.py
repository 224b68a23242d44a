"""The whole reconcile through a scale-down, without a cluster: the decommission walks its phases in order,
and an operator that dies at any phase, even after acting and before writing status, resumes from status
without starting over or repeating more than that one idempotent action."""

from __future__ import annotations

import collections
import itertools

import pytest

from tests.operator.fakes import OperatorCrashed, World, cluster_spec

PHASES = ["MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie", "ScalingDown",
          "ApplyingPvcPolicy"]


async def ready_world(replicas: int = 4) -> World:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=replicas))
    await w.tick()
    await w.tick()
    return w


async def run_to_end(w: World, crash_in: str | None = None, limit: int = 40) -> list[str]:
    """Tick until the decommission is over; returns the phases seen. ``crash_in``: in the first tick that
    starts in that phase, the operator dies after its actions and before its status write."""
    seen: list[str] = []
    for _ in range(limit):
        phase = (w.status.get("decommission") or {}).get("phase")
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
            if phase == crash_in:
                w.kube.crash_before_status_write = True
        if phase == "AwaitingReplication":
            w.zk.referencing.clear()                   # autorecovery has re-replicated the ledgers
        try:
            await w.tick()
        except OperatorCrashed:
            w.operator = w.new_operator()
        if seen and "decommission" not in w.status:
            return seen
    raise AssertionError(f"decommission did not finish: {w.status.get('decommission')}")


@pytest.mark.parametrize("crash_in", [None, *PHASES])
async def test_a_decommission_walks_its_phases_and_resumes_after_a_crash_in_any_of_them(crash_in: str | None) \
        -> None:
    w = await ready_world()
    gone = w.bookie_id(3)
    w.zk.referencing[gone] = 5                         # ledgers on the bookie: recovery is needed
    w.kube.patch_spec("bk", {"replicas": 3})
    seen = await run_to_end(w, crash_in)

    assert seen == PHASES
    assert w.status["decommissioned"] == [gone] and w.status["replicas"] == 3
    assert w.kube.objects.get(("StatefulSet", "team", "bk"), {}).get("spec", {}).get("replicas") == 3
    assert gone not in w.zk.cookies
    assert len(w.kube.reasons("DecommissionStarted")) == 1 and len(w.kube.reasons("Decommissioned")) == 1
    transitions = collections.Counter(w.kube.reasons("Decommissioning"))
    assert set(transitions) == {f"bk-3: {a} -> {b}" for a, b in itertools.pairwise(PHASES)}
    # A crash after acting repeats that one action at most once more.
    assert w.bookie(3).calls.count("set_read_only(True)") <= 2
    recoveries = sum(b.calls.count(f"recover_bookie({gone})") for b in w.bookies.values())
    assert recoveries <= 2
    assert w.zk.calls.count(f"delete_cookie({gone})") <= 2


async def test_a_second_decommission_starts_fresh_after_the_first_finished() -> None:
    w = await ready_world()
    w.kube.patch_spec("bk", {"replicas": 3})
    await run_to_end(w)
    w.kube.patch_spec("bk", {"replicas": 2})
    seen = await run_to_end(w)
    assert seen == ["MarkingReadOnly", "Recovering", "DeletingCookie", "ScalingDown", "ApplyingPvcPolicy"]
    assert w.status["decommissioned"] == [w.bookie_id(3), w.bookie_id(2)]
    assert [m.split(" ")[1] for m in w.kube.reasons("DecommissionStarted")] == ["bk-3", "bk-2"]


async def test_raising_replicas_before_the_cookie_is_deleted_cancels_and_makes_the_bookie_writable() -> None:
    w = await ready_world()
    w.zk.referencing[w.bookie_id(3)] = 5
    w.kube.patch_spec("bk", {"replicas": 3})
    while (w.status.get("decommission") or {}).get("phase") != "AwaitingReplication":
        await w.tick()
    w.kube.patch_spec("bk", {"replicas": 4})
    await w.tick()
    assert "decommission" not in w.status and not w.bookie(3).read_only
    assert w.kube.reasons("DecommissionCancelled") == ["bk-3: replicas raised to 4"]
