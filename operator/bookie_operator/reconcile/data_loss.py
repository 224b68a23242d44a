"""Forced decommission: a dead bookie's ledgers with no surviving replica, listed, then given up when named.

The decision (``decisions.data_loss``) is pure; this step gathers its facts (is the bookie being decommissioned,
by a scale-down or through spec.decommission, dead; which ledgers lose entries with it), repairs the accepted
ledgers' metadata and says what was lost, in ``status.dataLoss`` and in Warning Events. It runs before the
decommission steps, which it lets past the unreachable bookie's grace period once the loss is given up (the
bookie is known dead, not restarting).
"""

from __future__ import annotations

from bookie.metadata.data_loss import LedgerLoss, UnrepairableLoss

from bookie_operator.decisions import iso
from bookie_operator.decisions.data_loss import DataLossAction, Leaving, data_loss_step, given_up, leaving
from bookie_operator.models import DataLossStatus
from bookie_operator.reconcile.context import Tick
from bookie_operator.zk import MetadataError


async def give_up_lost_entries(t: Tick) -> None:
    decommission = leaving(t.status.decommission, t.status.decommission_requests)
    if decommission is None:
        if t.status.data_loss is not None and t.status.data_loss.phase == "AwaitingAcceptance":
            t.status.data_loss = None   # the decommission was cancelled, or finished without it
        return
    try:
        metadata = await t.cluster_metadata()
        registered = await metadata.registered_bookies()
        dead = _dead(t, decommission, registered)
        previous = t.status.data_loss
        resuming = previous is not None and previous.bookie_id == decommission.bookie_id \
            and previous.phase != "AwaitingAcceptance"
        lost: list[LedgerLoss] | None = None
        if dead and not resuming:
            lost = await metadata.ledgers_losing(decommission.bookie_id)
    except MetadataError as exc:
        t.wait(f"ZooKeeper: {exc}")
        return
    step = data_loss_step(previous, decommission.bookie_id, dead, lost, t.spec.accept_data_loss, t.now)
    t.status.data_loss = step.status
    match step.action:
        case DataLossAction.NONE:
            if step.announce:
                t.event("Warning", "DataLossAccepted", step.announce)
                t.wait("the lost ledgers' repair (status.dataLoss is kept first)")
        case DataLossAction.REFUSE:
            if step.announce:
                t.event("Warning", "DataLossNotAccepted", step.announce)
            assert step.status is not None
            t.problems.append(step.status.message)
            t.wait(f"spec.acceptDataLoss to name ledgers {step.status.not_accepted}")
        case DataLossAction.GIVE_UP:
            assert step.status is not None
            await _give_up(t, step.status, registered)


def _dead(t: Tick, decommission: Leaving, registered: set[str]) -> bool:
    """Not registered in ZooKeeper and its admin API silent: a bookie restarting for a moment is neither."""
    bookie = next((b for b in t.bookies if b.ordinal == decommission.ordinal), None)
    return decommission.bookie_id not in registered and not (bookie and bookie.reachable)


async def _give_up(t: Tick, state: DataLossStatus, registered: set[str]) -> None:
    """Repair each listed ledger (idempotent: one repaired before, or deleted, is left as it is)."""
    metadata = await t.cluster_metadata()
    live = sorted(registered - {state.bookie_id})
    replaced: dict[int, list[str]] = {}
    for ledger in state.ledgers:
        try:
            repair = await metadata.give_up_lost_entries(ledger.ledger_id, state.bookie_id, live)
        except UnrepairableLoss as exc:
            t.problems.append(f"ledger {ledger.ledger_id} cannot be given up: {exc}")
            t.wait(f"ledger {ledger.ledger_id}: {exc}")
            return
        except MetadataError as exc:
            t.wait(f"ZooKeeper: {exc}")
            return
        # Announced from the list kept in status, also for a ledger repaired by a tick whose status write
        # (and so its Events) an operator crash lost.
        topic = f" ({ledger.topic})" if ledger.topic else ""
        message = (f"ledger {ledger.ledger_id}{topic}: entries {','.join(ledger.lost_entries)} lost with "
                   f"{state.bookie_id}")
        if repair is not None:
            replaced[ledger.ledger_id] = sorted({r.live for r in repair.replaced})
            message += f"; its places holding only lost entries given to {', '.join(replaced[ledger.ledger_id])}"
        t.event("Warning", "EntriesGivenUp", message)
    t.status.data_loss = given_up(state, replaced, t.now)
    _no_grace(t, state.bookie_id)


def _no_grace(t: Tick, bookie_id: str) -> None:
    """Known dead: no grace for a restart, its other ledgers go to autorecovery now."""
    why = {"phase": "Recovering", "phase_since": iso(t.now), "message": "bookie dead, its lost entries given up"}
    decommission = t.status.decommission
    if decommission is not None and (decommission.bookie_id, decommission.phase) == (bookie_id, "MarkingReadOnly"):
        t.status.decommission = decommission.model_copy(update=why)
        t.event("Normal", "Decommissioning", f"{decommission.pod}: MarkingReadOnly -> Recovering")
    requests = t.status.decommission_requests
    for n, r in enumerate(requests):
        if r.bookie_id == bookie_id and r.phase == "MarkingReadOnly":
            t.status.decommission_requests = [*requests[:n], r.model_copy(update=why), *requests[n + 1:]]
            t.event("Normal", "Decommissioning", f"{r.pod}: MarkingReadOnly -> Recovering")
            return
