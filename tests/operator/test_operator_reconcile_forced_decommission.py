"""The whole reconcile through a forced decommission, without a cluster: a dead bookie held the only replica
of some ledgers' entries; they are listed in status with their Pulsar topic and nothing changes until
spec.acceptDataLoss names every one of them; then exactly those are given up (an Event per ledger),
the others are left to autorecovery, and the decommission finishes. An operator that dies after the
acceptance resumes the repair from status."""

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


async def dead_bookie_world() -> World:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=4))
    await w.tick()
    await w.tick()
    dead, alive = w.bookie_id(3), w.bookie_id(0)
    w.zk.ledgers = {10: closed((dead,), 1, TOPIC), 11: closed((dead,), 1), 12: closed((dead, alive), 2),
                    13: closed((alive,), 1)}
    w.zk.referencing[dead] = 3
    w.bookie(3).reachable = False                 # killed with its disk: it never registers again
    w.zk.registered.discard(dead)
    w.kube.patch_spec("bk", {"replicas": 3})
    return w


async def test_refused_until_every_lost_ledger_is_named_then_exactly_those_are_given_up() -> None:
    w = await dead_bookie_world()
    dead, before = w.bookie_id(3), dict(w.zk.ledgers)
    for _ in range(3):
        await w.tick()
    loss = w.status["dataLoss"]
    assert loss["phase"] == "AwaitingAcceptance" and loss["notAccepted"] == [10, 11]
    assert loss["ledgers"] == [
        {"ledgerId": 10, "topic": "persistent://public/default/orders", "lostEntries": ["0-9"], "replacedBy": []},
        {"ledgerId": 11, "lostEntries": ["0-9"], "replacedBy": []}]
    assert len(w.kube.reasons("DataLossNotAccepted")) == 1          # said once, not every tick
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and "missing: 10, 11" in degraded["message"]

    w.kube.patch_spec("bk", {"acceptDataLoss": [10, 12]})    # one short (12 loses nothing)
    for _ in range(3):
        await w.tick()
    assert w.status["dataLoss"]["notAccepted"] == [11]
    assert w.zk.ledgers == before and not [c for c in w.zk.calls if c.startswith("give_up")]
    assert w.status["decommission"]["phase"] == "MarkingReadOnly"

    w.kube.patch_spec("bk", {"acceptDataLoss": [10, 11, 12]})
    for _ in range(3):
        await w.tick()
    loss = w.status["dataLoss"]
    assert loss["phase"] == "GivenUp" and loss["notAccepted"] == []
    for ledger_id in (10, 11):
        md = w.zk.ledgers[ledger_id]
        assert dead not in md.bookies() and md.custom_metadata[LOST_ENTRIES_KEY] == f"{dead}:0-9".encode()
        assert [lg["replacedBy"] for lg in loss["ledgers"] if lg["ledgerId"] == ledger_id] == [sorted(md.bookies())]
    assert w.zk.ledgers[12] == before[12] and w.zk.ledgers[13] == before[13]   # autorecovery's, and untouched
    given_up = w.kube.reasons("EntriesGivenUp")
    assert len(given_up) == 2 and "ledger 10 (persistent://public/default/orders): entries 0-9 lost" in given_up[0]
    assert w.status["decommission"]["phase"] in ("Recovering", "AwaitingReplication")   # no unreachable grace

    w.zk.referencing.clear()                     # autorecovery moved ledger 12
    for _ in range(8):
        await w.tick()
    assert "decommission" not in w.status and w.status["decommissioned"] == [dead]
    assert w.status["dataLoss"]["phase"] == "GivenUp"                  # what was lost stays in status


@pytest.mark.parametrize("ticks_before_crash", [0, 1])
async def test_an_operator_killed_after_the_acceptance_resumes_the_repair_from_status(ticks_before_crash: int) \
        -> None:
    w = await dead_bookie_world()
    w.kube.patch_spec("bk", {"acceptDataLoss": [10, 11]})
    await w.tick()                                  # the decommission starts
    for _ in range(ticks_before_crash):
        await w.tick()
    w.kube.crash_before_status_write = True
    with pytest.raises(OperatorCrashed):
        await w.tick()
    w.operator = w.new_operator()
    for _ in range(4):
        await w.tick()
    assert w.status["dataLoss"]["phase"] == "GivenUp"
    assert all(w.bookie_id(3) not in w.zk.ledgers[i].bookies() for i in (10, 11))
    assert [m.split(":")[0] for m in w.kube.reasons("EntriesGivenUp")] == ["ledger 10 (persistent", "ledger 11"]
