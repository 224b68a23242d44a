"""A rebalance and a chosen bookie's decommission never run at once, and neither starves the other: a
decommission asked for while replica moves are in flight waits for those moves (Held, the reason naming them),
the rebalance plans no new move meanwhile, the decommission then runs to its end, and the rebalance resumes
after it (without a cluster: the reconcile against the in-memory fakes)."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec
from tests.operator.test_operator_reconcile_rebalance import autorecovery_finishes, old_ledgers


def rebalance(w: World) -> dict[str, object]:
    return dict(w.status.get("rebalance") or {})


def request(w: World) -> dict[str, object]:
    return next(iter(w.status.get("decommissionRequests") or []), {})


async def test_a_decommission_waits_for_the_moves_in_flight_and_the_rebalance_for_the_decommission() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=3, ensembleSize=2))
    await w.tick()
    await w.tick()
    w.zk.layouts = old_ledgers(w, 30)
    w.kube.patch_spec("bk", {"replicas": 5, "rebalance": {"enabled": True, "maxSpread": 0.1,
                                                           "maxConcurrentMoves": 2}})
    for _ in range(10):
        await w.tick()
        if rebalance(w).get("moves"):
            break
    in_flight = list(rebalance(w)["moves"])  # type: ignore[call-overload]
    assert in_flight, rebalance(w)

    w.kube.patch_spec("bk", {"decommission": ["bk-1"]})
    await w.tick()
    assert request(w)["phase"] == "Held" and "replica move" in str(request(w)["message"]), request(w)
    autorecovery_finishes(w)                  # the moves in flight end
    for _ in range(5):
        await w.tick()
        if request(w)["phase"] != "Held":
            break
    assert request(w)["phase"] == "MarkingReadOnly", request(w)
    assert rebalance(w)["moves"] == [] and "decommission of bk-1" in str(rebalance(w)["message"]), rebalance(w)

    for _ in range(40):                       # the decommission runs to its end, no move planned meanwhile
        phase = request(w)["phase"]
        if phase == "Done":
            break
        assert rebalance(w)["moves"] == [], (phase, rebalance(w))
        if phase == "AwaitingReplication":
            w.zk.referencing.clear()
        if phase == "AwaitingNewBookie":
            w.bookie(1).read_only = False
        await w.tick()
    assert request(w)["phase"] == "Done", request(w)
    for _ in range(5):                        # then the rebalance goes on
        await w.tick()
        if rebalance(w).get("moves"):
            break
    assert rebalance(w)["phase"] == "Moving" and rebalance(w)["moves"], rebalance(w)
