"""Whose loss the forced decommission checks: the bookie leaving by a scale-down or the one chosen in
spec.decommission, while its ledgers are still waited for (before its cookie is deleted), never a request that
is refused, held, queued, past its cookie or done; and the refusal names the one acceptance field."""

from __future__ import annotations

import datetime as dt

from bookie.metadata.data_loss import EntryRange, LedgerLoss
from bookie_operator.decisions.data_loss import Leaving, data_loss_step, leaving
from bookie_operator.models import DecommissionRequestStatus, DecommissionStatus

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
ID = "bk-{}.bk-headless.team.svc.cluster.local:3181"


def scale_down(phase: str) -> DecommissionStatus:
    return DecommissionStatus.model_validate({"ordinal": 3, "pod": "bk-3", "bookieId": ID.format(3),
                                              "phase": phase, "startedAt": "t", "phaseSince": "t"})


def chosen(phase: str, ordinal: int = 1) -> DecommissionRequestStatus:
    started = phase not in ("Refused", "Held", "Queued")
    return DecommissionRequestStatus.model_validate(
        {"entry": f"bk-{ordinal}", "phase": phase, "ordinal": ordinal, "phaseSince": "t",
         **({"pod": f"bk-{ordinal}", "bookieId": ID.format(ordinal)} if started else {})})


def test_the_scale_downs_bookie_is_checked_until_its_cookie_goes() -> None:
    for phase in ("MarkingReadOnly", "Recovering", "AwaitingReplication"):
        assert leaving(scale_down(phase), []) == Leaving(3, ID.format(3), chosen=False)
    for phase in ("DeletingCookie", "ScalingDown", "ApplyingPvcPolicy"):
        assert leaving(scale_down(phase), []) is None


def test_the_chosen_bookie_is_checked_until_its_cookie_goes() -> None:
    for phase in ("MarkingReadOnly", "Recovering", "AwaitingReplication"):
        assert leaving(None, [chosen("Done", 0), chosen(phase), chosen("Queued", 2)]) == \
            Leaving(1, ID.format(1), chosen=True)
    for phase in ("Refused", "Held", "Queued", "DeletingCookie", "RecreatingBookie", "AwaitingNewBookie", "Done"):
        assert leaving(None, [chosen(phase)]) is None, phase


def test_a_refusal_names_the_acceptance_field_for_either_path() -> None:
    lost = [LedgerLoss(12, None, (EntryRange(0, 24),))]
    step = data_loss_step(None, ID.format(1), True, lost, [], NOW)
    assert step.status is not None and "until spec.acceptDataLoss names every one" in step.status.message
