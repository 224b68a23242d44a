"""Safe scale-down: a resumable state machine, highest ordinal first, cancellable until the cookie goes."""

from __future__ import annotations

import datetime as dt

from bookie_operator.decisions import (
    DecommissionFacts,
    decommission_step,
    ordinal_to_decommission,
    start_decommission,
    statefulset_replicas,
)
from bookie_operator.models import DecommissionStatus

from tests.operator.helpers import NOW, spec

DOWN_TO_3 = spec(replicas=3, ensembleSize=2)


def facts(**kw: object) -> DecommissionFacts:
    base: dict[str, object] = dict(read_only=False, ledgers_referencing=None, under_replicated=None,
                                   cookie_exists=True, pod_exists=True, claims_remaining=2)
    return DecommissionFacts(**{**base, **kw})  # type: ignore[arg-type]


def at(phase: str, **kw: object) -> DecommissionStatus:
    state = start_decommission(3, "bk-3", "bk-3.bk-headless.ns.svc.cluster.local:3181", NOW)
    return state.model_copy(update={"phase": phase, **kw})


def test_the_highest_ordinal_goes_first_and_only_when_shrinking() -> None:
    assert ordinal_to_decommission(12, 10) == 11
    assert ordinal_to_decommission(3, 3) is None and ordinal_to_decommission(3, 5) is None


def test_the_full_path_with_the_delete_policy() -> None:
    state = at("MarkingReadOnly")
    step = decommission_step(state, facts(), DOWN_TO_3, NOW)
    assert step.actions == ["set-read-only"] and step.status == state and step.waiting
    step = decommission_step(state, facts(read_only=True), DOWN_TO_3, NOW)
    assert step.status is not None and step.status.phase == "Recovering"

    step = decommission_step(step.status, facts(read_only=True, ledgers_referencing=5, under_replicated=0),
                             DOWN_TO_3, NOW)
    assert step.actions == ["request-recovery"]
    requested = at("Recovering", recovery_requested_at="2026-11-22T12:00:00Z")
    step = decommission_step(requested, facts(ledgers_referencing=5, under_replicated=0), DOWN_TO_3, NOW)
    assert step.status is not None and step.status.phase == "AwaitingReplication"

    waiting = decommission_step(step.status, facts(ledgers_referencing=2, under_replicated=1), DOWN_TO_3, NOW)
    assert waiting.actions == [] and waiting.status is not None and waiting.status.phase == "AwaitingReplication"
    assert "2 ledgers still reference" in (waiting.waiting or "")

    step = decommission_step(step.status, facts(ledgers_referencing=0, under_replicated=0), DOWN_TO_3, NOW)
    assert step.status is not None and step.status.phase == "DeletingCookie"
    assert decommission_step(step.status, facts(), DOWN_TO_3, NOW).actions == ["delete-cookie"]
    step = decommission_step(step.status, facts(cookie_exists=False), DOWN_TO_3, NOW)
    assert step.status is not None and step.status.phase == "ScalingDown"
    assert statefulset_replicas(3, 4, step.status) == 3  # now the StatefulSet shrinks
    assert decommission_step(step.status, facts(), DOWN_TO_3, NOW).actions == ["shrink"]
    step = decommission_step(step.status, facts(pod_exists=False), DOWN_TO_3, NOW)
    assert step.status is not None and step.status.phase == "ApplyingPvcPolicy"
    gone = facts(pod_exists=False, cookie_exists=False)
    assert decommission_step(step.status, gone, DOWN_TO_3, NOW).actions == ["delete-claims"]
    done = decommission_step(step.status, facts(pod_exists=False, cookie_exists=False, claims_remaining=0),
                             DOWN_TO_3, NOW)
    assert done.finished and done.status is None


def test_a_cookie_the_dying_pod_wrote_again_is_deleted_before_the_volumes() -> None:
    """A dead bookie's pod, restarting on an empty disk after DeletingCookie, can write its cookie again before
    the StatefulSet ends it; a bookie later scaled up at that ordinal would then fail on it (CookieMismatch)."""
    step = decommission_step(at("ApplyingPvcPolicy"), facts(pod_exists=False, cookie_exists=True), DOWN_TO_3, NOW)
    assert step.actions == ["delete-cookie"] and not step.finished
    retain = spec(replicas=3, ensembleSize=2, scaleDown={"pvcPolicy": "Retain"})
    kept = decommission_step(at("ApplyingPvcPolicy"), facts(pod_exists=False, cookie_exists=True), retain, NOW)
    assert kept.finished and kept.actions == []      # Retain keeps the identity: its cookie stays


def test_a_bookie_without_ledgers_skips_recovery() -> None:
    step = decommission_step(at("Recovering"), facts(ledgers_referencing=0, under_replicated=0), DOWN_TO_3, NOW)
    assert step.status is not None and step.status.phase == "DeletingCookie"


def test_the_retain_policy_keeps_cookie_and_volumes() -> None:
    retain = spec(replicas=3, ensembleSize=2, scaleDown={"pvcPolicy": "Retain"})
    step = decommission_step(at("DeletingCookie"), facts(), retain, NOW)
    assert step.actions == [] and step.status is not None and step.status.phase == "ScalingDown"
    done = decommission_step(at("ApplyingPvcPolicy"), facts(pod_exists=False), retain, NOW)
    assert done.finished and done.actions == []


def test_the_statefulset_keeps_its_size_until_the_bookie_is_drained() -> None:
    for phase in ("MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie"):
        assert statefulset_replicas(3, 4, at(phase)) == 4
    assert statefulset_replicas(3, 4, None) == 4
    assert statefulset_replicas(5, 4, None) == 5  # scale-up is immediate
    assert statefulset_replicas(3, None, None) == 3


def test_raising_replicas_again_cancels_before_the_cookie_is_touched() -> None:
    back = spec(replicas=4, ensembleSize=2)
    step = decommission_step(at("AwaitingReplication"), facts(), back, NOW)
    assert step.cancelled and step.status is None and step.actions == ["set-writable"]
    step = decommission_step(at("ScalingDown"), facts(), back, NOW)
    assert not step.cancelled and step.actions == ["shrink"]


def test_a_stalled_replication_says_how_long_it_waited() -> None:
    old = at("AwaitingReplication", phase_since="2026-11-22T10:00:00Z")
    step = decommission_step(old, facts(ledgers_referencing=1, under_replicated=1), DOWN_TO_3,
                             NOW + dt.timedelta(minutes=1))
    assert "recoveryTimeoutSeconds" in (step.waiting or "")


def test_the_state_survives_a_round_trip_through_status() -> None:
    from bookie_operator.models import parse_status

    state = at("AwaitingReplication", recovery_requested_at="2026-11-22T12:00:00Z")
    body = {"decommission": state.model_dump(by_alias=True, exclude_none=True), "junk": 1}
    assert parse_status(body).decommission == state


def test_a_bookie_that_stays_unreachable_is_recovered_without_being_marked_read_only() -> None:
    state = at("MarkingReadOnly")
    soon = decommission_step(state, facts(read_only=None), DOWN_TO_3, NOW + dt.timedelta(minutes=1))
    assert soon.actions == ["set-read-only"] and soon.status == state
    later = decommission_step(state, facts(read_only=None), DOWN_TO_3, NOW + dt.timedelta(minutes=6))
    assert later.status is not None and later.status.phase == "Recovering"
    assert later.status.message == "bookie unreachable, not marked read-only"
