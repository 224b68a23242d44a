"""A storage audit on request, as the reconcile decides it: a new value of the cluster's audit-request annotation
starts a run now (named to the second, never a fire time's name), once; a request made during a run starts one
when it ends; the schedule goes on as before; without a schedule there is no audit to run, and a Warning says so
once."""

from __future__ import annotations

import datetime as dt

from bookie_operator import audit_builders
from bookie_operator.decisions import audit as decide
from bookie_operator.decisions.audit import AuditStep, JobPhase
from bookie_operator.models import AuditSpec, AuditStatus

T0 = dt.datetime(2026, 11, 24, 2, 0, tzinfo=dt.UTC)
SPEC = AuditSpec(schedule="0 3 * * *", timeout_seconds=3600)


def tick(status: AuditStatus, job: JobPhase, now: dt.datetime, request: str | None,
         spec: AuditSpec = SPEC) -> tuple[AuditStatus, list[decide.AuditAction], list[decide.AuditNote]]:
    return decide.audit_tick(spec, status, job, "", now, T0,
                             lambda due, on_request: audit_builders.run_id("fleet", due, on_request),
                             request=request)


def test_a_new_request_starts_a_run_now_and_only_once() -> None:
    at = T0 + dt.timedelta(minutes=12, seconds=34)
    status, actions, notes = tick(AuditStatus(), JobPhase.MISSING, at, "2026-11-24T02:12:30Z")
    assert [(a.kind, a.run_id) for a in actions] == [(AuditStep.LAUNCH, "fleet-audit-20261124t021234")]
    assert status.run is not None and status.run.request == "2026-11-24T02:12:30Z"
    assert status.run.scheduled_for == "2026-11-24T02:12:34Z"
    assert status.last_request == "2026-11-24T02:12:30Z"
    assert [(n.type, n.reason) for n in notes] == [("Normal", "AuditStarted")] and "on request" in notes[0].message
    status, actions, _ = tick(status, JobPhase.SUCCEEDED, at + dt.timedelta(minutes=3), "2026-11-24T02:12:30Z")
    assert [a.kind for a in actions] == [AuditStep.COLLECT]
    done = decide.collected(status, decide.summarize({}), "http://r", at + dt.timedelta(minutes=3))
    # The annotation still says the same: nothing more runs until it changes.
    status, actions, _ = tick(done, JobPhase.MISSING, at + dt.timedelta(minutes=4), "2026-11-24T02:12:30Z")
    assert actions == [] and status.run is None
    status, actions, _ = tick(status, JobPhase.MISSING, at + dt.timedelta(minutes=5), "again")
    assert [a.kind for a in actions] == [AuditStep.LAUNCH] and status.last_request == "again"


def test_no_request_and_an_empty_one_start_nothing() -> None:
    for request in (None, ""):
        status, actions, notes = tick(AuditStatus(), JobPhase.MISSING, T0 + dt.timedelta(minutes=5), request)
        assert actions == [] and notes == [] and status.run is None and status.last_request is None


def test_a_request_during_a_run_starts_one_when_it_ends() -> None:
    at = T0 + dt.timedelta(hours=1, seconds=5)
    status, actions, _ = tick(AuditStatus(), JobPhase.MISSING, at, None)
    assert [a.kind for a in actions] == [AuditStep.LAUNCH]
    scheduled = status.run
    assert scheduled is not None and scheduled.request is None
    status, actions, _ = tick(status, JobPhase.RUNNING, at + dt.timedelta(minutes=1), "now please")
    assert actions == [] and status.run == scheduled and status.last_request is None
    status, actions, _ = tick(status, JobPhase.FAILED, at + dt.timedelta(minutes=2), "now please")
    assert status.last_run is not None and status.last_run.id == scheduled.id
    assert [a.kind for a in actions] == [AuditStep.LAUNCH]
    assert status.run is not None and status.run.request == "now please"
    assert status.run.id == "fleet-audit-20261124t030205" != scheduled.id


def test_the_schedule_goes_on_after_a_requested_run() -> None:
    at = T0 + dt.timedelta(minutes=59, seconds=50)
    status, _, _ = tick(AuditStatus(), JobPhase.MISSING, at, "r1")
    assert status.run is not None and status.last_schedule_time is None
    status, actions, _ = tick(status, JobPhase.SUCCEEDED, at + dt.timedelta(minutes=2), "r1")
    status = decide.collected(status, decide.summarize({}), "http://r", at + dt.timedelta(minutes=2))
    # 03:00 fell during the requested run: still within its starting deadline, it runs now.
    status, actions, _ = tick(status, JobPhase.MISSING, at + dt.timedelta(minutes=3), "r1")
    assert [(a.kind, a.run_id) for a in actions] == [(AuditStep.LAUNCH, "fleet-audit-20261124t0300")]
    assert status.last_schedule_time == "2026-11-24T03:00:00Z"


def test_without_a_schedule_a_request_is_refused_once_with_a_warning() -> None:
    status, actions, notes = tick(AuditStatus(), JobPhase.MISSING, T0, "r1", spec=AuditSpec())
    assert actions == [] and status.run is None and status.last_request == "r1"
    assert [(n.type, n.reason) for n in notes] == [("Warning", "AuditRequestIgnored")]
    assert "spec.audit.schedule is not set" in notes[0].message
    status, actions, notes = tick(status, JobPhase.MISSING, T0 + dt.timedelta(seconds=30), "r1", spec=AuditSpec())
    assert actions == [] and notes == []


def test_run_names_on_request_are_to_the_second_and_sort_with_the_schedules() -> None:
    scheduled = audit_builders.run_id("fleet", "2026-11-24T03:00:00Z")
    requested = audit_builders.run_id("fleet", "2026-11-24T03:00:07Z", on_request=True)
    assert (scheduled, requested) == ("fleet-audit-20261124t0300", "fleet-audit-20261124t030007")
    assert sorted([requested, scheduled, audit_builders.run_id("fleet", "2026-11-24T02:59:59Z", True)]) == [
        "fleet-audit-20261124t025959", scheduled, requested]
    assert len(audit_builders.run_id("c" * 80, "2026-11-24T03:00:07Z", True)) == 63
