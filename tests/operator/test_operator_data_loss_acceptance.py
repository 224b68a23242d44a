"""The pure decision of a forced decommission: a dead bookie's lost ledgers are refused (said once per change)
until spec.acceptDataLoss names every one; then their list is kept (GivingUp) before anything is
repaired, resumes as such, and stays as the record of what was given up; a live bookie loses nothing."""

from __future__ import annotations

import datetime as dt

from bookie.metadata.data_loss import EntryRange, LedgerLoss
from bookie_operator.decisions.data_loss import DataLossAction, data_loss_step, given_up

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
DEAD = "bk-2.bk-headless.team.svc.cluster.local:3181"
LOST = [LedgerLoss(12, "persistent://public/default/orders", (EntryRange(0, 24),)),
        LedgerLoss(7, None, (EntryRange(3, 3), EntryRange(6, None)))]


def test_a_live_or_lossless_bookie_needs_no_acceptance() -> None:
    assert data_loss_step(None, DEAD, False, LOST, [], NOW).status is None
    step = data_loss_step(None, DEAD, True, [], [], NOW)
    assert step.status is None and step.action is DataLossAction.NONE


def test_lost_ledgers_missing_from_the_spec_are_refused_and_said_once() -> None:
    step = data_loss_step(None, DEAD, True, LOST, [12], NOW)
    assert step.action is DataLossAction.REFUSE and step.status is not None
    assert step.status.phase == "AwaitingAcceptance" and step.status.not_accepted == [7]
    assert [(lg.ledger_id, lg.topic, lg.lost_entries) for lg in step.status.ledgers] == \
        [(7, None, ["3-3", "6-"]), (12, "persistent://public/default/orders", ["0-24"])]
    assert step.announce is not None and "missing: 7" in step.announce and "ledger 12 (persistent:" in step.announce
    again = data_loss_step(step.status, DEAD, True, LOST, [12], NOW + dt.timedelta(seconds=30))
    assert again.action is DataLossAction.REFUSE and again.announce is None
    assert again.status is not None and again.status.since == step.status.since
    changed = data_loss_step(step.status, DEAD, True, LOST, [], NOW)
    assert changed.announce is not None and changed.status is not None and changed.status.not_accepted == [7, 12]


def test_naming_every_lost_ledger_keeps_the_list_before_anything_is_repaired() -> None:
    step = data_loss_step(None, DEAD, True, LOST, [7, 12, 99], NOW)   # 99 loses nothing: harmless
    assert step.action is DataLossAction.NONE and step.status is not None and step.status.phase == "GivingUp"
    assert step.announce is not None and step.announce.startswith("loss accepted: ledger 7 entries 3-3,6-")
    resumed = data_loss_step(step.status, DEAD, True, None, [7, 12], NOW)   # the list in status, not re-read
    assert resumed.action is DataLossAction.GIVE_UP and resumed.status == step.status


def test_what_was_given_up_stays_until_another_bookies_loss_replaces_it() -> None:
    giving_up = data_loss_step(None, DEAD, True, LOST, [7, 12], NOW).status
    assert giving_up is not None
    done = given_up(giving_up, {12: ["bk-0.bk-headless.team.svc.cluster.local:3181"]}, NOW)
    assert done.phase == "GivenUp" and [lg.replaced_by for lg in done.ledgers] == \
        [[], ["bk-0.bk-headless.team.svc.cluster.local:3181"]]
    assert data_loss_step(done, DEAD, True, None, [], NOW).status == done
    assert data_loss_step(done, "bk-1", False, None, [], NOW).status == done
    other = data_loss_step(done, "bk-1", True, LOST[:1], [], NOW)
    assert other.status is not None and other.status.bookie_id == "bk-1" and other.status.phase == "AwaitingAcceptance"
