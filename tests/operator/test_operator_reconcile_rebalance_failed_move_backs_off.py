"""A replica move that fails is not planned again at once: its ledger is held back one minute after the first
failure, twice as long after each failure in a row (up to an hour), named in status.rebalance.failedMoves with
the error; a ledger whose move later succeeds is forgotten there."""

from __future__ import annotations

from bookie_operator.decisions.observed import parse_time
from bookie_operator.decisions.rebalance import LedgerLayout

from tests.operator.fakes import World, cluster_spec

GIB = 1 << 30


def one_ledger_to_move(w: World) -> list[LedgerLayout]:
    """Two bookies, all the data on the first: ledger 7 is the one replica that can move (9 is open), so every
    plan is the same move."""
    b0 = w.bookie_id(0)
    return [LedgerLayout(7, True, 30 * GIB, 999, 1, 1, ((0, (b0,)),)),
            LedgerLayout(9, False, 40 * GIB, 999, 1, 1, ((0, (b0,)),))]


def asks(w: World, ledger_id: int) -> int:
    return sum(1 for b in w.bookies.values() for c in b.calls if c.startswith(f"move_replica({ledger_id},"))


def fail_running_moves(w: World) -> None:
    for bookie in w.bookies.values():
        for ledger_id, (state, source, target) in list(bookie.moves.items()):
            if state == "running":
                bookie.moves[ledger_id] = ("failed", source, target)


async def test_a_failing_move_is_retried_after_a_growing_wait() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=2, rebalance={"enabled": True, "maxSpread": 0.05,
                                                                     "maxConcurrentMoves": 1}))
    await w.tick()
    await w.tick()
    w.zk.layouts = one_ledger_to_move(w)
    waits = []
    for failure in (1, 2, 3):
        for _ in range(3):          # planned, then asked of the target
            await w.tick(1)
        assert asks(w, 7) == failure, w.status.get("rebalance")
        fail_running_moves(w)
        await w.tick(1)             # the failure is seen
        failed = w.status["rebalance"]["failedMoves"]
        assert [(f["ledgerId"], f["failures"]) for f in failed] == [(7, failure)]
        assert failed[0]["lastError"] == "the target could not read the replica"
        retry_after = parse_time(failed[0]["retryAfter"])
        assert retry_after is not None
        waits.append(round((retry_after - w.clock.now).total_seconds()))
        for _ in range(10):         # held back until its retryAfter
            await w.tick(1)
        assert asks(w, 7) == failure
        assert w.status["rebalance"]["moves"] == []
        w.clock.advance((retry_after - w.clock.now).total_seconds() + 1)
    assert [w_ - waits[0] for w_ in waits] == [0, 60, 180], waits    # 1, 2, then 4 minutes
    events = [m for _, reason, m in w.kube.events if reason == "RebalanceMoveFailed"]
    assert len(events) == 3 and "not planned again before" in events[0], events
