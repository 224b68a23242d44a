"""The decisions of spec.decommission (pure): which bookie an entry names, which entries are refused, held, queued
or started, and the phases of the one in progress, from read-only to the empty bookie at the same ordinal."""

from __future__ import annotations

import datetime as dt

import pytest
from bookie_operator.decisions import retire
from bookie_operator.decisions.retire import Gate, RetireAction, RetireFacts
from bookie_operator.models import BookieClusterSpec, DecommissionRequestStatus

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
OPEN = Gate(busy=None, under_replicated=0, not_ready=[])
SPEC = BookieClusterSpec.model_validate({"replicas": 5, "ensembleSize": 3,
                                         "metadataService": {"zkServers": "zk:2181"}})


def bookie_id(ordinal: int) -> str:
    return f"bk-{ordinal}.bk-headless.ns.svc.cluster.local:3181"


def resolve(entry: str, replicas: int = 5) -> int | str:
    return retire.resolve_entry(entry, "bk", replicas, bookie_id)


def plan(entries: list[str], previous: list[DecommissionRequestStatus] | None = None, gate: Gate = OPEN,
         replicas: int = 5) -> retire.Plan:
    resolved = {e: resolve(e, replicas) for e in entries}
    spec = SPEC.model_copy(update={"replicas": replicas})
    refusals = {o: retire.refusal(o, replicas, spec) for o in resolved.values() if isinstance(o, int)}
    return retire.plan_requests(entries, previous or [], resolved, refusals, gate, NOW)


def running(phase: str, entry: str = "bk-2", **extra: object) -> DecommissionRequestStatus:
    return DecommissionRequestStatus.model_validate(
        {"entry": entry, "phase": phase, "ordinal": 2, "pod": "bk-2", "bookieId": bookie_id(2),
         "phaseSince": "2026-11-28T11:00:00Z", "startedAt": "2026-11-28T11:00:00Z", "oldPodUid": "old", **extra})


@pytest.mark.parametrize("entry", ["2", "bk-2", bookie_id(2), " bk-2 "])
def test_an_entry_names_a_bookie_by_ordinal_pod_or_bookie_id(entry: str) -> None:
    assert resolve(entry) == 2


@pytest.mark.parametrize(("entry", "said"), [
    ("bk-7", "there is no bookie bk-7, the cluster runs ordinals 0..4"),
    ("5", "there is no bookie bk-5"),
    ("other-2", "is not a bookie of this cluster"),
    ("bk-2.bk-headless.elsewhere.svc.cluster.local:3181", "is not a bookie of this cluster"),
])
def test_an_entry_that_names_no_bookie_is_refused_with_the_reason(entry: str, said: str) -> None:
    p = plan([entry])
    assert p.start is None
    [r] = p.requests
    assert r.phase == "Refused" and said in r.message


def test_a_bookie_whose_peers_cannot_hold_an_ensemble_is_refused() -> None:
    [r] = plan(["bk-1"], replicas=3).requests
    assert r.phase == "Refused" and "cannot hold an ensemble of 3" in r.message


def test_two_entries_naming_one_bookie_refuse_the_second() -> None:
    p = plan(["bk-2", "2"])
    assert [r.phase for r in p.requests] == ["MarkingReadOnly", "Refused"]
    assert "same bookie as 'bk-2'" in p.requests[1].message


@pytest.mark.parametrize(("gate", "said"), [
    (Gate(busy="the implementation switch", under_replicated=0, not_ready=[]), "waiting for the implementation"),
    (Gate(busy=None, under_replicated=4, not_ready=[]), "4 ledgers are under-replicated"),
    (Gate(busy=None, under_replicated=None, not_ready=[]), "waiting for ZooKeeper"),
    (Gate(busy=None, under_replicated=0, not_ready=["bk-4"]), "waiting for bk-4 to be ready"),
])
def test_a_valid_entry_is_held_while_the_cluster_is_not_healthy(gate: Gate, said: str) -> None:
    p = plan(["bk-2"], gate=gate)
    assert p.start is None
    [r] = p.requests
    assert r.phase == "Held" and said in r.message and r.ordinal == 2


def test_a_held_entry_keeps_its_time_while_nothing_changes_and_starts_once_the_gate_opens() -> None:
    held = plan(["bk-2"], gate=Gate(busy=None, under_replicated=1, not_ready=[])).requests
    again = plan(["bk-2"], held, gate=Gate(busy=None, under_replicated=1, not_ready=[])).requests
    assert again[0] is held[0]
    p = plan(["bk-2"], again)
    assert p.start is not None and p.start.phase == "MarkingReadOnly" and p.start.ordinal == 2


def test_one_at_a_time_the_others_are_queued_behind_it() -> None:
    p = plan(["bk-2", "bk-3"], [running("AwaitingReplication")])
    assert p.start is None
    assert [(r.entry, r.phase) for r in p.requests] == [("bk-2", "AwaitingReplication"), ("bk-3", "Queued")]
    assert "after 'bk-2'" in p.requests[1].message


def test_a_done_entry_does_not_run_again_and_removing_it_clears_the_record() -> None:
    done = running("Done", completedAt="2026-11-28T11:30:00Z")
    p = plan(["bk-2"], [done])
    assert p.start is None and p.requests == [done]
    assert plan([], [done]).requests == []
    again = plan(["bk-2"], [])                  # added back later: decommissioned again
    assert again.start is not None


@pytest.mark.parametrize("phase", ["MarkingReadOnly", "Recovering", "AwaitingReplication"])
def test_removing_the_entry_before_the_cookie_is_deleted_cancels(phase: str) -> None:
    p = plan([], [running(phase)])
    assert p.requests == [] and [r.phase for r in p.cancelled] == [phase]


@pytest.mark.parametrize("phase", ["DeletingCookie", "RecreatingBookie", "AwaitingNewBookie"])
def test_removing_the_entry_after_the_cookie_went_does_not_stop_it(phase: str) -> None:
    p = plan(["bk-3"], [running(phase)])
    assert p.cancelled == [] and p.start is None
    assert [(r.entry, r.phase) for r in p.requests] == [("bk-2", phase), ("bk-3", "Queued")]


def step(phase: str, **facts: object) -> retire.RetireStep:
    return retire.retire_step(running(phase), RetireFacts(**facts), SPEC, NOW)  # type: ignore[arg-type]


def test_the_ledgers_leave_through_the_scale_down_phases() -> None:
    s = step("MarkingReadOnly", read_only=False)
    assert s.status.phase == "MarkingReadOnly" and s.actions == [RetireAction.SET_READ_ONLY]
    assert step("MarkingReadOnly", read_only=True).status.phase == "Recovering"
    s = step("Recovering", read_only=True, ledgers_referencing=3, under_replicated=0)
    assert s.actions == [RetireAction.REQUEST_RECOVERY] and s.status.phase == "Recovering"
    s = step("AwaitingReplication", ledgers_referencing=3, under_replicated=0)
    assert s.status.phase == "AwaitingReplication" and "3 ledgers still reference" in s.status.message
    s = step("AwaitingReplication", ledgers_referencing=0, under_replicated=1)
    assert s.status.phase == "AwaitingReplication"            # verified: nothing under-replicated either
    assert step("AwaitingReplication", ledgers_referencing=0, under_replicated=0).status.phase == "DeletingCookie"


def test_the_cookie_goes_before_the_pod_and_only_the_old_pod_is_deleted() -> None:
    s = step("DeletingCookie", cookie_exists=True)
    assert s.actions == [RetireAction.DELETE_COOKIE] and s.status.phase == "DeletingCookie"
    assert step("DeletingCookie", cookie_exists=None).actions == [RetireAction.DELETE_COOKIE]   # unknown: again
    assert step("DeletingCookie", cookie_exists=False).status.phase == "RecreatingBookie"
    s = step("RecreatingBookie", pod_uid="old")
    assert s.actions == [RetireAction.DELETE_CLAIMS, RetireAction.DELETE_POD]
    for successor in (None, "new"):
        s = step("RecreatingBookie", pod_uid=successor)
        assert s.actions == [] and s.status.phase == "AwaitingNewBookie"


def test_it_is_done_once_the_new_bookie_is_registered_writable_with_its_own_cookie() -> None:
    s = step("AwaitingNewBookie", pod_uid="new", new_bookie_ready=False, cookie_exists=False)
    assert s.actions == [] and s.status.phase == "AwaitingNewBookie" and s.waiting
    s = step("AwaitingNewBookie", pod_uid="new", new_bookie_ready=True, cookie_exists=True)
    assert s.status.phase == "Done" and s.status.completed_at == "2026-11-28T12:00:00Z"


def test_the_old_bookie_stays_out_of_read_only_control_until_its_pod_is_gone() -> None:
    assert retire.old_bookie_runs([running("RecreatingBookie")]) == 2
    assert retire.old_bookie_runs([running("AwaitingNewBookie")]) is None
    assert retire.old_bookie_runs([running("Done")]) is None
