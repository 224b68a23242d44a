"""The whole reconcile through spec.decommission, without a cluster: the chosen bookie walks every phase, its
pod (that one only) is deleted and re-created by the StatefulSet, and an operator that dies in any phase, after
acting and before writing status, resumes from status without starting over or deleting the new pod."""

from __future__ import annotations

import collections
import itertools

import pytest

from tests.operator.fakes import OperatorCrashed, World, cluster_spec

PHASES = ["MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie", "RecreatingBookie",
          "AwaitingNewBookie", "Done"]


def request(w: World) -> dict[str, object]:
    return next(iter(w.status.get("decommissionRequests") or []), {})


async def run_to_end(w: World, crash_in: str | None = None, limit: int = 40) -> list[str]:
    """Tick until the request is done; returns the phases seen. ``crash_in``: the first tick that starts in that
    phase dies after its actions and before its status write."""
    seen: list[str] = []
    for _ in range(limit):
        phase = str(request(w).get("phase", ""))
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
            if phase == crash_in:
                w.kube.crash_before_status_write = True
        if phase == "Done":
            return seen
        if phase == "AwaitingReplication":
            w.zk.referencing.clear()                   # autorecovery has re-replicated the ledgers
        if phase == "AwaitingNewBookie":
            w.bookie(2).read_only = False              # the new bookie starts writable (same pod IP here)
        try:
            await w.tick()
        except OperatorCrashed:
            w.operator = w.new_operator()
    raise AssertionError(f"the decommission did not finish: {request(w)}")


@pytest.mark.parametrize("crash_in", [None, *PHASES[:-1]])
async def test_a_chosen_bookie_walks_its_phases_and_resumes_after_a_crash_in_any_of_them(crash_in: str | None) \
        -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=5, ensembleSize=3))
    await w.tick()
    await w.tick()
    gone = w.bookie_id(2)
    old_uid = w.kube.objects[("Pod", "team", "bk-2")]["metadata"]["uid"]
    w.zk.referencing[gone] = 5
    w.kube.patch_spec("bk", {"decommission": ["bk-2"]})
    seen = await run_to_end(w, crash_in)

    assert seen == PHASES
    assert w.kube.objects.get(("StatefulSet", "team", "bk"), {}).get("spec", {}).get("replicas") == 5
    new_uid = w.kube.objects[("Pod", "team", "bk-2")]["metadata"]["uid"]
    assert new_uid != old_uid
    assert w.kube.deleted.count("Pod/bk-2") <= 2 and not [d for d in w.kube.deleted if d.startswith("Pod/bk-")
                                                          and d != "Pod/bk-2"]
    assert gone in w.zk.cookies                         # the new bookie's own cookie
    assert len(w.kube.reasons("DecommissionStarted")) == 1 and len(w.kube.reasons("Decommissioned")) == 1
    transitions = collections.Counter(w.kube.reasons("Decommissioning"))
    assert set(transitions) == {f"bk-2: {a} -> {b}" for a, b in itertools.pairwise(PHASES)}
    assert w.zk.calls.count(f"delete_cookie({gone})") <= 2
    # Done once: further ticks with the entry still in the spec change nothing.
    deleted = list(w.kube.deleted)
    for _ in range(3):
        await w.tick()
    assert w.kube.deleted == deleted and request(w)["phase"] == "Done"


async def test_an_entry_naming_no_bookie_or_under_replicated_ledgers_change_nothing() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=5, ensembleSize=3))
    await w.tick()
    await w.tick()
    w.kube.patch_spec("bk", {"decommission": ["bk-9"]})
    await w.tick()
    await w.tick()
    assert request(w)["phase"] == "Refused" and "no bookie bk-9" in str(request(w)["message"])
    assert len(w.kube.reasons("DecommissionRefused")) == 1          # once, not every tick
    w.zk.under_replicated_ledgers = 2
    w.kube.patch_spec("bk", {"decommission": ["bk-1"]})
    await w.tick()
    await w.tick()
    assert request(w)["phase"] == "Held" and "2 ledgers are under-replicated" in str(request(w)["message"])
    assert len(w.kube.reasons("DecommissionHeld")) == 1
    assert not w.kube.reasons("DecommissionStarted") and not w.kube.deleted
    assert all("set_read_only(True)" not in b.calls for b in w.bookies.values())
    w.zk.under_replicated_ledgers = 0
    await w.tick()
    assert request(w)["phase"] == "MarkingReadOnly"


async def test_a_re_replication_that_outlasts_the_recovery_timeout_makes_the_cluster_degraded() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=5, ensembleSize=3))
    await w.tick()
    await w.tick()
    w.zk.referencing[w.bookie_id(2)] = 5               # never re-replicated
    w.kube.patch_spec("bk", {"decommission": ["2"]})
    for _ in range(4):
        await w.tick()
    assert request(w)["phase"] == "AwaitingReplication"
    await w.tick(seconds=3700)                          # past scaleDown.recoveryTimeoutSeconds (3600)
    await w.tick()
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and "decommission of bk-2 stalled" in degraded["message"]
    assert request(w)["phase"] == "AwaitingReplication"


def _decommissioning(w: World) -> dict[str, str]:
    return next(c for c in w.status["conditions"] if c["type"] == "Decommissioning")


async def test_the_decommissioning_condition_names_the_chosen_bookie_in_every_phase() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=5, ensembleSize=3))
    await w.tick()
    await w.tick()
    assert _decommissioning(w)["status"] == "False"
    w.zk.referencing[w.bookie_id(2)] = 5
    w.kube.patch_spec("bk", {"decommission": ["bk-2"]})
    for _ in range(40):
        await w.tick()
        phase = str(request(w)["phase"])
        if phase == "Done":
            break
        condition = _decommissioning(w)
        assert condition["status"] == "True" and condition["reason"] == phase, condition
        assert condition["message"].startswith(f"bk-2 ({w.bookie_id(2)})"), condition
        if phase == "AwaitingReplication":
            w.zk.referencing.clear()
        if phase == "AwaitingNewBookie":
            w.bookie(2).read_only = False
    assert request(w)["phase"] == "Done"
    assert _decommissioning(w)["status"] == "False" and _decommissioning(w)["reason"] == "Idle"
