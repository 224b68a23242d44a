"""Rebalancing's pure decisions: which replica moves where, until the usage spread is within maxSpread, and
what holds it."""

from __future__ import annotations

import random
from typing import Any

from bookie_operator.decisions.rebalance import BookieDisk, LedgerLayout, Move, hold_reason, plan_moves, spread, usage

GIB = 1 << 30


def ledger(ledger_id: int, bookies: tuple[str, ...], length: int, closed: bool = True) -> LedgerLayout:
    return LedgerLayout(ledger_id, closed, length, 999, len(bookies), len(bookies), ((0, bookies),))


def apply(ledgers: list[LedgerLayout], move: Move) -> list[LedgerLayout]:
    out = []
    for lg in ledgers:
        if lg.ledger_id == move.ledger_id:
            ens = tuple((first, tuple(move.target if b == move.source else b for b in members))
                        for first, members in lg.ensembles)
            lg = LedgerLayout(lg.ledger_id, lg.closed, lg.length, lg.last_entry_id, lg.ensemble_size,
                              lg.write_quorum, ens)
        out.append(lg)
    return out


def test_after_a_scale_up_the_fullest_give_to_the_new_until_within_the_spread() -> None:
    old, new = ["b0", "b1", "b2"], ["b3", "b4"]
    disks = [BookieDisk(b, GIB, writable=True) for b in old + new]
    ledgers = [ledger(i, ("b0", "b1", "b2")[: 2] if i % 2 else ("b1", "b2"), 10 << 20) for i in range(40)]
    moves = 0
    while True:
        planned = plan_moves(disks, ledgers, [], max_spread=0.005, slots=2)
        if not planned:
            break
        for move in planned:
            assert move.target not in next(lg for lg in ledgers if lg.ledger_id == move.ledger_id).bookies
            ledgers = apply(ledgers, move)
            moves += 1
        assert moves < 200, "the plan does not converge"
    final = spread(disks, usage(disks, ledgers))
    assert final is not None and final <= 0.005 + (10 << 20) / GIB, final
    assert all(len(set(lg.bookies)) == 2 for lg in ledgers)
    assert {b for lg in ledgers for b in lg.bookies} >= set(new)


def test_within_the_spread_nothing_moves() -> None:
    disks = [BookieDisk(b, GIB, writable=True) for b in ("a", "b", "c")]
    ledgers = [ledger(1, ("a", "b"), 1 << 20), ledger(2, ("b", "c"), 1 << 20), ledger(3, ("c", "a"), 1 << 20)]
    assert plan_moves(disks, ledgers, [], max_spread=0.1, slots=4) == []


def test_open_ledgers_busy_ledgers_and_read_only_targets_are_not_chosen() -> None:
    disks = [BookieDisk("full", GIB, True), BookieDisk("ro", GIB, False), BookieDisk("empty", GIB, True),
             BookieDisk("other", GIB, True)]
    ledgers = [ledger(1, ("full", "other"), 100 << 20, closed=False), ledger(2, ("full", "other"), 50 << 20),
               ledger(3, ("full", "other"), 40 << 20)]
    in_flight = [Move(2, "full", "empty", 50 << 20)]
    # Planned on the usage the move in flight leaves: "other" (190 MiB) is now the fullest, "empty" (50 MiB
    # coming) the emptiest writable one; ledger 1 is open, ledger 2 is already moving.
    assert plan_moves(disks, ledgers, in_flight, max_spread=0.01, slots=4) == [Move(3, "other", "empty", 40 << 20)]


def test_a_move_never_overshoots_and_the_spread_never_grows() -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    names = [f"b{i}" for i in range(rng.randint(3, 7))]
    disks = [BookieDisk(b, rng.choice([GIB, 2 * GIB]), writable=True) for b in names]
    ledgers = [ledger(i, tuple(rng.sample(names[:3], 2)), rng.randint(1, 64) << 20) for i in range(60)]
    before = spread(disks, usage(disks, ledgers))
    for _ in range(300):
        planned = plan_moves(disks, ledgers, [], max_spread=0.02, slots=1)
        if not planned:
            break
        used = usage(disks, ledgers)
        (move,) = planned
        totals = {d.bookie_id: d.total_bytes for d in disks}
        assert (used[move.source] - move.bytes) / totals[move.source] >= \
            (used[move.target] + move.bytes) / totals[move.target], f"seed {seed}: overshoot {move}"
        ledgers = apply(ledgers, move)
        after = spread(disks, usage(disks, ledgers))
        assert after is not None and before is not None and after <= before + 1e-9, f"seed {seed}"
        before = after
    else:
        raise AssertionError(f"seed {seed}: no convergence in 300 moves")


def test_each_hold_is_named() -> None:
    ok: dict[str, Any] = {"not_ready": [], "under_replicated": 0, "decommissioning": None, "switching": False,
          "implementation": "bookie-fleet"}
    assert hold_reason(**ok) is None
    cases: list[tuple[dict[str, Any], str]] = [({"not_ready": ["bk-3"]}, "bookies not ready: bk-3"),
             ({"under_replicated": 2}, "2 ledgers under-replicated"),
             ({"under_replicated": None}, "under-replicated ledgers unknown"),
             ({"decommissioning": "bk-4"}, "decommission of bk-4"),
             ({"switching": True}, "implementation switch"),
             ({"implementation": "apache-bookkeeper"}, "need bookie-fleet bookies")]
    for change, text in cases:
        reason = hold_reason(**{**ok, **change})
        assert reason is not None and text in reason, (change, reason)
