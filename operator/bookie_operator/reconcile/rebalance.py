"""spec.rebalance: follow the replica moves in flight, then hold, or plan the next ones (``status.rebalance``).

A move is recorded in status in the tick that plans it and asked of the target bookie's autorecovery only in
a later tick, once that status is written: an operator that dies in between finds it and asks then; one that
dies after asking asks again, which the bookie answers with the same move (or, finished, with a no-op). A move
is done when the ledger's metadata names the target instead of the source, whatever the bookie remembers.
"""

from __future__ import annotations

from bookie_operator import metrics
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.decisions import iso, retire
from bookie_operator.decisions.rebalance import (
    BookieDisk,
    LedgerLayout,
    Move,
    held_back,
    hold_reason,
    plan_moves,
    record_failure,
    spread,
    usage,
)
from bookie_operator.models import RebalancePhase, RebalanceStatus, ReplicaMoveStatus
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.observe import observe_under_replication
from bookie_operator.zk import MetadataError


async def rebalance(t: Tick) -> None:
    spec = t.spec.rebalance
    state = t.status.rebalance
    if not spec.enabled and (state is None or not state.moves):
        t.status.rebalance = None      # off: nothing kept once the last move in flight is followed to its end
        return
    state = (state or RebalanceStatus(phase="Balanced", since=iso(t.now))).model_copy(deep=True)
    try:
        layouts = await (await t.cluster_metadata()).ledger_layouts()
    except MetadataError as exc:
        t.wait(f"rebalance: ZooKeeper: {exc}")
        return
    await _follow(t, state, {lg.ledger_id: lg for lg in layouts})
    disks = [BookieDisk(b.bookie_id, b.total_bytes, writable=b.read_only is False) for b in t.bookies
             if b.ready and b.reachable and b.total_bytes]
    state.spread = spread(disks, usage(disks, layouts))
    metrics.REBALANCE_SPREAD.labels(t.namespace, t.name).set(state.spread or 0.0)
    reason = await _hold(t)
    if reason is not None:
        _set_phase(t, state, "Paused" if spec.paused else "Held", reason)
    elif spec.enabled:
        _plan(t, state, disks, layouts)
    if state.moves:
        t.wait(f"rebalance: {len(state.moves)} replica moves in flight")
    t.status.rebalance = state


async def _hold(t: Tick) -> str | None:
    if t.spec.rebalance.paused:
        return "spec.rebalance.paused"
    not_ready = [b.pod for b in t.bookies if not b.ready or b.terminating]
    if len(t.bookies) < t.desired_replicas:
        not_ready.append(f"{t.desired_replicas - len(t.bookies)} missing")
    if t.under_replicated is None:
        t.under_replicated = await observe_under_replication(t)
    decommissioning = t.status.decommission.pod if t.status.decommission else _chosen_decommission(t)
    return hold_reason(not_ready=not_ready, under_replicated=t.under_replicated, decommissioning=decommissioning,
                       switching=t.status.implementation_switch is not None,
                       implementation=t.spec.implementation)


def _chosen_decommission(t: Tick) -> str | None:
    """A spec.decommission entry running or waiting to run: new moves wait for it (a decommission waits for the
    moves in flight, so planning more would keep it waiting for ever)."""
    settled = {r.entry for r in t.status.decommission_requests if r.phase in ("Done", "Refused")}
    running = retire.in_progress(t.status.decommission_requests)
    if running is not None:
        return running.entry
    return next((entry for entry in t.spec.decommission if entry not in settled), None)


def _plan(t: Tick, state: RebalanceStatus, disks: list[BookieDisk], layouts: list[LedgerLayout]) -> None:
    spec = t.spec.rebalance
    in_flight = [Move(m.ledger_id, m.source, m.target, m.bytes) for m in state.moves]
    planned = plan_moves(disks, layouts, in_flight, spec.max_spread,
                         slots=spec.max_concurrent_moves - len(state.moves), held=held_back(state.failed_moves, t.now))
    for move in planned:
        state.moves.append(ReplicaMoveStatus(ledger_id=move.ledger_id, source=move.source, target=move.target,
                                             bytes=move.bytes, started_at=iso(t.now)))
        t.event("Normal", "RebalanceMove", f"ledger {move.ledger_id}: replica of ~{move.bytes} bytes from "
                f"{move.source} to {move.target}")
    if state.moves:
        _set_phase(t, state, "Moving", f"spread {state.spread or 0:.3g} > maxSpread {spec.max_spread}")
    elif state.spread is not None and state.spread > spec.max_spread:
        _set_phase(t, state, "Balanced", f"spread {state.spread:.3g}: no closed ledger's replica can move "
                   "without overshooting")
    else:
        _set_phase(t, state, "Balanced", f"spread {state.spread or 0:.3g} within maxSpread {spec.max_spread}")


def _set_phase(t: Tick, state: RebalanceStatus, phase: RebalancePhase, message: str) -> None:
    if state.phase != phase:
        state.since = iso(t.now)
        if phase == "Held":
            t.event("Warning", "RebalanceHeld", message)
        elif phase in ("Balanced", "Paused"):
            t.event("Normal", f"Rebalance{phase}", message)
    elif phase == "Held" and state.message != message:
        t.event("Warning", "RebalanceHeld", message)
    state.phase, state.message = phase, message


async def _follow(t: Tick, state: RebalanceStatus, layouts: dict[int, LedgerLayout]) -> None:
    """Each move in flight: done (the metadata says so), gone (its ledger was deleted), asked, or polled."""
    admins = {b.bookie_id: t.admins.get(b.ordinal) for b in t.bookies}
    rate = max(1, t.spec.rebalance.bytes_per_second // t.spec.rebalance.max_concurrent_moves)
    kept: list[ReplicaMoveStatus] = []
    state.failed_moves = [f for f in state.failed_moves if f.ledger_id in layouts]   # deleted ledgers forgotten
    for move in state.moves:
        layout = layouts.get(move.ledger_id)
        if layout is None:
            continue
        if move.source not in layout.bookies and move.target in layout.bookies:
            state.failed_moves = [f for f in state.failed_moves if f.ledger_id != move.ledger_id]
            state.moves_done += 1
            state.bytes_moved += move.bytes
            metrics.REBALANCE_MOVES.labels("moved").inc()
            metrics.REBALANCE_BYTES.inc(move.bytes)
            continue
        admin = admins.get(move.target)
        if admin is None:
            t.wait(f"rebalance: {move.target} unreachable, its move of ledger {move.ledger_id} waits")
            kept.append(move)
            continue
        try:
            known = await admin.replica_move_state(move.ledger_id) if move.requested else None
            if known is not None and known[0] == "failed":
                error = known[1] or "no reason given"
                state.moves_failed += 1
                state.failed_moves = record_failure(state.failed_moves, Move(move.ledger_id, move.source,
                                                                             move.target, move.bytes), error, t.now)
                metrics.REBALANCE_MOVES.labels("failed").inc()
                t.event("Warning", "RebalanceMoveFailed", f"ledger {move.ledger_id} from {move.source} to "
                        f"{move.target}: {error}; not planned again before {state.failed_moves[-1].retry_after}")
                continue
            if known is None:
                await admin.move_replica(move.ledger_id, move.source, move.target, rate)
                move = move.model_copy(update={"requested": True})
        except BookieApiError as exc:
            t.wait(f"rebalance: move of ledger {move.ledger_id} on {move.target}: {exc}")
        kept.append(move)
    state.moves = kept
