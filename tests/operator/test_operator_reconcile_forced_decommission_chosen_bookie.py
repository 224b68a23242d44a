"""The whole reconcile through the forced decommission of a bookie named in spec.decommission, without a cluster:
the middle bookie of four died with its disk while it held the only replica of a ledger. Its decommission starts
although it is not ready and its ledgers are marked under-replicated (its own marks); the lost ledger is listed
in status with its Pulsar topic and nothing changes until spec.acceptDataLoss names it; then exactly it is
given up, the rest is left to autorecovery, and the ordinal is re-created empty with the StatefulSet's replicas
unchanged. An operator that dies during the repair resumes it from status."""

from __future__ import annotations

import pytest
from bookie.metadata.data_loss import LOST_ENTRIES_KEY
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState

from tests.operator.fakes import OperatorCrashed, World, cluster_spec

TOPIC = {"pulsar/managed-ledger": b"public/default/persistent/orders"}


def closed(ensemble: tuple[str, ...], write_quorum: int, custom: dict[str, bytes] | None = None) -> LedgerMetadata:
    return LedgerMetadata(ensemble_size=len(ensemble), write_quorum_size=write_quorum, ack_quorum_size=1,
                          ensembles={0: ensemble}, state=LedgerState.CLOSED, last_entry_id=9, length=100,
                          custom_metadata=custom or {})


def request(w: World) -> dict[str, object]:
    return next(iter(w.status.get("decommissionRequests") or []), {})


async def middle_bookie_dead() -> World:
    """bk-1 of four killed with its disk: ledger 10 had its only replica there, ledger 11 another on bk-0."""
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=4))
    await w.tick()
    await w.tick()
    dead, alive = w.bookie_id(1), w.bookie_id(0)
    w.zk.ledgers = {10: closed((dead,), 1, TOPIC), 11: closed((dead, alive), 2), 12: closed((alive,), 1)}
    w.zk.referencing[dead] = 2
    w.zk.under_replicated_ledgers = w.zk.marked_missing_only[dead] = 2    # the auditor marked 10 and 11
    w.bookie(1).reachable = False
    w.zk.registered.discard(dead)
    w.kube.patch_spec("bk", {"decommission": ["bk-1"]})
    return w


def autorecovery_done(w: World) -> None:
    """Ledger 11 copied off the dead bookie; ledger 10's mark cleared once its metadata no longer waits."""
    w.zk.referencing.clear()
    w.zk.under_replicated_ledgers = 0
    w.zk.marked_missing_only.clear()


async def run_to_done(w: World, limit: int = 30) -> None:
    for _ in range(limit):
        phase = request(w).get("phase")
        if phase == "Done":
            return
        if phase == "AwaitingReplication":
            autorecovery_done(w)
        if phase == "AwaitingNewBookie":
            w.bookie(1).reachable, w.bookie(1).read_only = True, False    # the new, empty bookie
        await w.tick()
    raise AssertionError(f"the decommission did not finish: {request(w)}")


async def test_a_dead_chosen_bookie_waits_for_its_lost_ledger_to_be_named_then_is_recreated_empty() -> None:
    w = await middle_bookie_dead()
    dead, before = w.bookie_id(1), dict(w.zk.ledgers)
    for _ in range(3):
        await w.tick()
    assert request(w)["phase"] in ("MarkingReadOnly", "Recovering", "AwaitingReplication"), request(w)
    loss = w.status["dataLoss"]
    assert loss["bookieId"] == dead and loss["phase"] == "AwaitingAcceptance" and loss["notAccepted"] == [10]
    assert loss["ledgers"] == [{"ledgerId": 10, "topic": "persistent://public/default/orders",
                                "lostEntries": ["0-9"], "replacedBy": []}]
    refused = w.kube.reasons("DataLossNotAccepted")
    assert len(refused) == 1 and "spec.acceptDataLoss" in refused[0]
    assert w.zk.ledgers == before and not [c for c in w.zk.calls if c.startswith("give_up")]

    w.kube.patch_spec("bk", {"acceptDataLoss": [10]})
    for _ in range(2):
        await w.tick()
    assert w.status["dataLoss"]["phase"] == "GivenUp"
    assert request(w)["phase"] in ("Recovering", "AwaitingReplication")      # no grace for a known-dead bookie
    repaired = w.zk.ledgers[10]
    assert dead not in repaired.bookies() and repaired.custom_metadata[LOST_ENTRIES_KEY] == f"{dead}:0-9".encode()
    assert w.zk.ledgers[11] == before[11] and w.zk.ledgers[12] == before[12]  # autorecovery's, and untouched
    assert len(w.kube.reasons("EntriesGivenUp")) == 1

    old_uid = w.kube.objects[("Pod", "team", "bk-1")]["metadata"]["uid"]
    await run_to_done(w)
    assert w.kube.objects[("Pod", "team", "bk-1")]["metadata"]["uid"] != old_uid
    assert w.kube.objects[("StatefulSet", "team", "bk")]["spec"]["replicas"] == 4
    assert not [d for d in w.kube.deleted if d.startswith("Pod/") and d != "Pod/bk-1"]
    assert w.status["decommissioned"] == [dead] and w.status["dataLoss"]["phase"] == "GivenUp"


async def test_a_dead_chosen_bookie_with_nothing_lost_needs_no_acceptance() -> None:
    w = await middle_bookie_dead()
    w.zk.ledgers = {11: w.zk.ledgers[11]}
    w.zk.referencing[w.bookie_id(1)] = 1
    await run_to_done(w, limit=90)      # past the grace an unreachable bookie gets before Recovering (300 s)
    assert "dataLoss" not in w.status and not w.kube.reasons("DataLossNotAccepted")


@pytest.mark.parametrize(("ticks_before_crash", "crashing_in"), [(1, None), (2, "GivingUp")])
async def test_an_operator_killed_during_the_repair_resumes_it_from_status(
        ticks_before_crash: int, crashing_in: str | None) -> None:
    w = await middle_bookie_dead()
    w.kube.patch_spec("bk", {"acceptDataLoss": [10]})
    for _ in range(ticks_before_crash):
        await w.tick()
    assert (w.status.get("dataLoss") or {}).get("phase") == crashing_in
    w.kube.crash_before_status_write = True
    with pytest.raises(OperatorCrashed):
        await w.tick()
    w.operator = w.new_operator()
    for _ in range(3):
        await w.tick()
    assert w.status["dataLoss"]["phase"] == "GivenUp"
    assert w.bookie_id(1) not in w.zk.ledgers[10].bookies()
    assert [m.split(":")[0] for m in w.kube.reasons("EntriesGivenUp")] == ["ledger 10 (persistent"]
    await run_to_done(w)
    assert w.status["decommissioned"] == [w.bookie_id(1)]
