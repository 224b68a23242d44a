"""Forced decommission of a dead bookie: may its ledgers' unrecoverable entries be given up? (status.dataLoss)

A bookie being decommissioned (by a scale-down, or named in ``spec.decommission``) that is dead (not registered
in ZooKeeper, its admin API unreachable) may hold the only replica of some entries. Autorecovery cannot copy
those, so the decommission would wait forever. The ledgers are listed in ``status.dataLoss``
(AwaitingAcceptance) and nothing changes until ``spec.acceptDataLoss`` names every one of them; then the list
is kept in status first (GivingUp), so an operator killed in the middle knows what it gave up, and the ledgers'
metadata is repaired (``bookie.metadata.data_loss``) until GivenUp. Naming ledgers that lose nothing is
harmless: only lost ones are touched.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from bookie.metadata.data_loss import LedgerLoss

from bookie_operator.decisions.observed import iso
from bookie_operator.models import (
    DataLossStatus,
    DecommissionRequestStatus,
    DecommissionStatus,
    LostLedgerStatus,
)

# Before the cookie is deleted: the decommission still waits for its ledgers to be re-replicated.
CHECKED_PHASES = ("MarkingReadOnly", "Recovering", "AwaitingReplication")


@dataclass(frozen=True)
class Leaving:
    """The bookie whose decommission still waits for its ledgers to be re-replicated."""

    ordinal: int
    bookie_id: str
    chosen: bool    # named in spec.decommission (status.decommissionRequests), not removed by a scale-down


def leaving(decommission: DecommissionStatus | None, requests: Sequence[DecommissionRequestStatus]) \
        -> Leaving | None:
    """The scale-down's or the chosen bookie's decommission before its cookie is deleted (at most one runs)."""
    if decommission is not None and decommission.phase in CHECKED_PHASES:
        return Leaving(decommission.ordinal, decommission.bookie_id, chosen=False)
    chosen = next((r for r in requests if r.phase in CHECKED_PHASES), None)
    if chosen is not None and chosen.ordinal is not None and chosen.bookie_id is not None:
        return Leaving(chosen.ordinal, chosen.bookie_id, chosen=True)
    return None


class DataLossAction(enum.StrEnum):
    NONE = "none"
    REFUSE = "refuse"        # some lost ledgers are not accepted: say which, change nothing
    GIVE_UP = "give-up"      # repair the ledgers listed in status (GivingUp)


@dataclass(frozen=True)
class DataLossStep:
    status: DataLossStatus | None
    action: DataLossAction
    announce: str | None = None   # a Warning Event's message: the list or the acceptance changed


def data_loss_step(previous: DataLossStatus | None, bookie_id: str, dead: bool, lost: Sequence[LedgerLoss] | None,
                   accepted: Sequence[int], now: dt.datetime) -> DataLossStep:
    """One tick's decision for the dead bookie ``bookie_id`` being decommissioned.

    ``lost``: the ledgers losing entries with it (None: not read this tick, as when GivingUp resumes).
    A record of entries already given up (GivenUp) is kept until another bookie's loss replaces it.
    """
    ours = previous is not None and previous.bookie_id == bookie_id
    if ours and previous is not None and previous.phase in ("GivingUp", "GivenUp"):
        return DataLossStep(previous, DataLossAction.GIVE_UP if previous.phase == "GivingUp" else DataLossAction.NONE)
    kept = previous if previous is not None and previous.phase == "GivenUp" else None
    if not dead or not lost:
        return DataLossStep(kept, DataLossAction.NONE)
    ledgers = [_ledger_status(loss) for loss in sorted(lost, key=lambda loss: loss.ledger_id)]
    missing = sorted({loss.ledger_id for loss in lost} - set(accepted))
    since = previous.since if ours and previous is not None else iso(now)
    if missing:
        status = DataLossStatus(bookie_id=bookie_id, phase="AwaitingAcceptance", ledgers=ledgers,
                                not_accepted=missing, since=since, message=refusal(bookie_id, ledgers, missing))
        changed = previous is None or previous.phase != "AwaitingAcceptance" or previous.not_accepted != missing \
            or previous.ledgers != ledgers
        return DataLossStep(status, DataLossAction.REFUSE, status.message if changed else None)
    status = DataLossStatus(bookie_id=bookie_id, phase="GivingUp", ledgers=ledgers, since=iso(now),
                            message=f"giving up the entries listed of {len(ledgers)} ledgers lost with {bookie_id}")
    return DataLossStep(status, DataLossAction.NONE, f"loss accepted: {describe(ledgers)}")


def refusal(bookie_id: str, ledgers: Sequence[LostLedgerStatus], missing: Sequence[int]) -> str:
    return (f"{bookie_id} is dead and held the only replica of entries of {len(ledgers)} ledgers "
            f"({describe(ledgers)}); the decommission waits until spec.acceptDataLoss names every one "
            f"of them; missing: {', '.join(str(i) for i in missing)}")


def describe(ledgers: Sequence[LostLedgerStatus]) -> str:
    """``ledger 12 (persistent://t/ns/x) entries 0-24; ...``"""
    return "; ".join(f"ledger {lg.ledger_id}{f' ({lg.topic})' if lg.topic else ''} entries "
                     f"{','.join(lg.lost_entries)}" for lg in ledgers)


def _ledger_status(loss: LedgerLoss) -> LostLedgerStatus:
    return LostLedgerStatus(ledger_id=loss.ledger_id, topic=loss.topic, lost_entries=[str(r) for r in loss.lost])


def given_up(status: DataLossStatus, replaced: dict[int, list[str]], now: dt.datetime) -> DataLossStatus:
    """GivenUp: each ledger with the bookies that took the dead one's places (none: repaired earlier)."""
    ledgers = [lg.model_copy(update={"replaced_by": replaced.get(lg.ledger_id, lg.replaced_by)})
               for lg in status.ledgers]
    return status.model_copy(update={"phase": "GivenUp", "ledgers": ledgers, "since": iso(now),
                                     "message": f"given up: {describe(ledgers)}"})
