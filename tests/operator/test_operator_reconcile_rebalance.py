"""The whole reconcile through a rebalance, without a cluster: after a scale-up from 3 to 5 the old bookies'
replicas move to the new ones until the spread is within maxSpread, a move is recorded before it is asked of
a bookie, an operator that dies with moves in flight asks again rather than losing or doubling them, and a
rebalance is held (reason in status, an Event) while ledgers are under-replicated."""

from __future__ import annotations

import random

from bookie_operator.decisions.rebalance import LedgerLayout

from tests.operator.fakes import OperatorCrashed, World, cluster_spec

GIB = 1 << 30


def old_ledgers(w: World, count: int) -> list[LedgerLayout]:
    old = [w.bookie_id(i) for i in range(3)]
    return [LedgerLayout(i, True, 2 * GIB, 999, 2, 2, ((0, (old[i % 3], old[(i + 1) % 3])),)) for i in range(count)]


def autorecovery_finishes(w: World) -> None:
    """Every move the bookies were asked for happens, as their autorecovery would do it: the ensemble swapped."""
    for bookie in w.bookies.values():
        for ledger_id, (state, source, target) in list(bookie.moves.items()):
            if state != "running":
                continue
            w.zk.layouts = [lg if lg.ledger_id != ledger_id else LedgerLayout(
                lg.ledger_id, lg.closed, lg.length, lg.last_entry_id, lg.ensemble_size, lg.write_quorum,
                tuple((f, tuple(target if b == source else b for b in m)) for f, m in lg.ensembles))
                for lg in w.zk.layouts]
            bookie.moves[ledger_id] = ("moved", source, target)


async def test_a_scale_up_is_rebalanced_through_operator_crashes() -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=3))
    await w.tick()
    await w.tick()
    w.zk.layouts = old_ledgers(w, 30)        # 40 GiB on each old bookie of 100 GiB
    w.kube.patch_spec("bk", {"replicas": 5, "rebalance": {"enabled": True, "maxSpread": 0.1,
                                                           "maxConcurrentMoves": 2}})
    asked_before_recorded = []
    for _ in range(80):
        if rng.random() < 0.3:
            w.kube.crash_before_status_write = True
        try:
            await w.tick()
        except OperatorCrashed:
            w.operator = w.new_operator()
        recorded = {m["ledgerId"] for m in (w.status.get("rebalance") or {}).get("moves", [])}
        asked = {lid for b in w.bookies.values() for lid, (st, _, _) in b.moves.items() if st == "running"}
        asked_before_recorded += sorted(asked - recorded)     # what status holds after a crash, too
        autorecovery_finishes(w)
        state = w.status.get("rebalance") or {}
        if state.get("phase") == "Balanced" and not state.get("moves") and state.get("movesDone"):
            break
    else:
        raise AssertionError(f"seed {seed}: not balanced: {w.status.get('rebalance')}")
    assert asked_before_recorded == [], f"seed {seed}: moves asked before they were recorded"
    assert state["spread"] <= 0.1, f"seed {seed}: {state}"
    assert all(len(set(lg.bookies)) == 2 for lg in w.zk.layouts), f"seed {seed}"
    new = {w.bookie_id(3), w.bookie_id(4)}
    moved = sum(len(lg.bookies & new) for lg in w.zk.layouts)     # replicas now on the new bookies
    assert state["movesDone"] == moved and state["bytesMoved"] == moved * 2 * GIB, f"seed {seed}"
    asks = [c for b in w.bookies.values() for c in b.calls if c.startswith("move_replica")]
    assert len(set(asks)) == moved and len(asks) <= 2 * moved, f"seed {seed}: {asks}"


async def test_a_rebalance_waits_while_ledgers_are_under_replicated() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=5, rebalance={"enabled": True}))
    await w.tick()
    await w.tick()
    w.zk.layouts = old_ledgers(w, 30)
    w.zk.under_replicated_ledgers = 3
    for _ in range(3):
        await w.tick()
    state = w.status["rebalance"]
    assert state["phase"] == "Held" and "3 ledgers under-replicated" in state["message"]
    assert not state.get("moves") and not any(b.moves for b in w.bookies.values())
    held = w.kube.reasons("RebalanceHeld")     # also while the new cluster's bookies were starting
    assert len([m for m in held if "under-replicated" in m]) == 1, held   # once, not every tick
    w.zk.under_replicated_ledgers = 0
    await w.tick()
    assert w.status["rebalance"]["phase"] == "Moving" and w.status["rebalance"]["moves"]
