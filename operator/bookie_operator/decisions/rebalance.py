"""Rebalancing: which ledger replica moves from which bookie to which, and when to hold (pure).

A bookie's usage is the ledger data its ensembles give it (from the ledgers' metadata) over its disk size.
The disk's own figure would lag every move by the source's garbage collection (its copy is deleted by the
over-replicated ledger GC, and the space freed only by compaction), so planning on it would keep moving data
off a bookie that has already given it away. Moves go from the fullest bookie to the emptiest, largest first
among the replicas that do not overshoot (the source stays at least as full as the target), one ledger at a
time per move, until the spread between the fullest and the emptiest is within ``maxSpread``. A ledger whose
move failed is held back before it is planned again, one minute after its first failure, doubling with each
failure in a row up to an hour: a move that cannot succeed (a target that refuses it, a replica that cannot be
read) is retried, not hammered.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bookie_operator.decisions.observed import iso, parse_time
from bookie_operator.models import FailedReplicaMove

RETRY_FIRST_S = 60.0
RETRY_MAX_S = 3600.0
FAILED_KEPT = 100   # status.rebalance.failedMoves' bound


@dataclass(frozen=True)
class BookieDisk:
    """One ready bookie as rebalancing sees it."""

    bookie_id: str
    total_bytes: int
    writable: bool          # only writable bookies receive replicas


@dataclass(frozen=True)
class LedgerLayout:
    """A ledger's metadata as far as rebalancing needs it."""

    ledger_id: int
    closed: bool
    length: int                                         # bytes of the ledger (all entries)
    last_entry_id: int
    ensemble_size: int
    write_quorum: int
    ensembles: tuple[tuple[int, tuple[str, ...]], ...]  # (first entry, bookies)

    def stored(self) -> dict[str, int]:
        """Estimated bytes each bookie stores of this ledger: each segment's share of the entries, times the
        share of them a position stores (write quorum over ensemble size)."""
        out: dict[str, int] = {}
        entries = self.last_entry_id + 1
        if entries <= 0 or self.length <= 0:
            return {b: 0 for _, members in self.ensembles for b in members}
        for k, (first, members) in enumerate(self.ensembles):
            last = self.ensembles[k + 1][0] - 1 if k + 1 < len(self.ensembles) else self.last_entry_id
            segment = max(0, last - first + 1) * self.length // entries
            for bookie in members:
                out[bookie] = out.get(bookie, 0) + segment * self.write_quorum // max(1, self.ensemble_size)
        return out

    @property
    def bookies(self) -> frozenset[str]:
        return frozenset(b for _, members in self.ensembles for b in members)


@dataclass(frozen=True)
class Move:
    ledger_id: int
    source: str
    target: str
    bytes: int


def usage(disks: Iterable[BookieDisk], ledgers: Iterable[LedgerLayout]) -> dict[str, int]:
    """Bytes of ledger data on each of ``disks``' bookies."""
    used = {d.bookie_id: 0 for d in disks}
    for ledger in ledgers:
        for bookie, size in ledger.stored().items():
            if bookie in used:
                used[bookie] += size
    return used


def spread(disks: Iterable[BookieDisk], used: Mapping[str, int]) -> float | None:
    """Fullest minus emptiest usage fraction; None with fewer than two bookies."""
    fractions = [used.get(d.bookie_id, 0) / d.total_bytes for d in disks if d.total_bytes > 0]
    return max(fractions) - min(fractions) if len(fractions) >= 2 else None


def retry_delay_s(failures: int) -> float:
    """How long a ledger whose move failed ``failures`` times in a row waits before it is planned again."""
    return min(RETRY_MAX_S, RETRY_FIRST_S * 2 ** max(0, failures - 1))


def record_failure(failed: list[FailedReplicaMove], move: Move, error: str,
                   now: dt.datetime) -> list[FailedReplicaMove]:
    """``failed`` with this move's failure counted (one entry per ledger, the latest last, at most FAILED_KEPT)."""
    previous = next((f for f in failed if f.ledger_id == move.ledger_id), None)
    failures = previous.failures + 1 if previous is not None else 1
    entry = FailedReplicaMove(ledger_id=move.ledger_id, target=move.target, failures=failures,
                              retry_after=iso(now + dt.timedelta(seconds=retry_delay_s(failures))),
                              last_error=error[:500])
    others = [f for f in failed if f.ledger_id != move.ledger_id]
    return [*others[-(FAILED_KEPT - 1):], entry]


def held_back(failed: Iterable[FailedReplicaMove], now: dt.datetime) -> set[int]:
    """Ledgers that may not be planned yet: their last move failed and their retryAfter is still ahead."""
    return {f.ledger_id for f in failed if (parse_time(f.retry_after) or now) > now}


def hold_reason(*, not_ready: list[str], under_replicated: int | None, decommissioning: str | None,
                switching: bool, implementation: str) -> str | None:
    """Why no move may start now, or None. In-flight moves are still followed to their end."""
    if implementation != "bookie-fleet":
        return "replica moves need bookie-fleet bookies (their autorecovery copies the replica)"
    if not_ready:
        return f"bookies not ready: {', '.join(not_ready)}"
    if under_replicated is None:
        return "under-replicated ledgers unknown (ZooKeeper did not answer)"
    if under_replicated:
        return f"{under_replicated} ledgers under-replicated: autorecovery goes first"
    if decommissioning:
        return f"the decommission of {decommissioning} goes first"
    if switching:
        return "implementation switch running"
    return None


def plan_moves(disks: list[BookieDisk], ledgers: list[LedgerLayout], in_flight: list[Move], max_spread: float,
               slots: int, held: Iterable[int] = ()) -> list[Move]:
    """Up to ``slots`` new moves, each on a ledger not already moving nor ``held`` back, planned on the usage the
    moves in flight will leave. Empty when the spread is within ``max_spread`` or no replica fits."""
    by_id = {d.bookie_id: d for d in disks if d.total_bytes > 0}
    used = usage(by_id.values(), ledgers)
    for move in in_flight:
        if move.source in used and move.target in used:
            used[move.source] -= move.bytes
            used[move.target] += move.bytes
    busy = {m.ledger_id for m in in_flight} | set(held)
    planned: list[Move] = []
    while len(planned) < slots:
        nxt = _next_move(by_id, ledgers, used, busy, max_spread)
        if nxt is None:
            break
        planned.append(nxt)
        move = nxt
        busy.add(move.ledger_id)
        used[move.source] -= move.bytes
        used[move.target] += move.bytes
    return planned


def _next_move(by_id: Mapping[str, BookieDisk], ledgers: list[LedgerLayout], used: dict[str, int],
               busy: set[int], max_spread: float) -> Move | None:
    def fraction(bookie: str) -> float:
        return used[bookie] / by_id[bookie].total_bytes

    current = spread(by_id.values(), used)
    if current is None or current <= max_spread:
        return None
    targets = sorted((b for b, d in by_id.items() if d.writable), key=lambda b: (fraction(b), b))
    sources = sorted(by_id, key=lambda b: (-fraction(b), b))
    for source in sources:
        for target in targets:
            if fraction(source) - fraction(target) <= max_spread:
                break
            found = _largest_fitting(ledgers, source, target, by_id, used, busy)
            if found is not None:
                return found
    return None


def _largest_fitting(ledgers: list[LedgerLayout], source: str, target: str, by_id: Mapping[str, BookieDisk],
                     used: Mapping[str, int], busy: set[int]) -> Move | None:
    """The largest closed ledger replica on ``source`` that ``target`` does not hold, whose move leaves the
    source at least as full as the target (ledger id breaks ties, so the plan is deterministic)."""
    s_total, t_total = by_id[source].total_bytes, by_id[target].total_bytes
    best: Move | None = None
    for ledger in ledgers:
        if not ledger.closed or ledger.ledger_id in busy or target in ledger.bookies or source not in ledger.bookies:
            continue
        size = ledger.stored().get(source, 0)
        if size <= 0 or (used[source] - size) / s_total < (used[target] + size) / t_total:
            continue
        if best is None or (size, -ledger.ledger_id) > (best.bytes, -best.ledger_id):
            best = Move(ledger.ledger_id, source, target, size)
    return best
