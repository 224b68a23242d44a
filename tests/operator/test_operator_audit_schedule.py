"""The storage audit's schedule and findings, as the reconcile decides them: one run per fire time, launched once
and followed through its Job; a run missed by more than the deadline skipped; a failed or overdue Job ends the run;
the summary read from the report store becomes status; a data-loss finding is a condition; bookies over the
compaction bound are compacted only when that is enabled."""

from __future__ import annotations

import datetime as dt

from bookie_operator.decisions import audit as decide
from bookie_operator.decisions.audit import AuditStep, JobPhase
from bookie_operator.models import AuditSpec, AuditStatus

T0 = dt.datetime(2026, 11, 24, 2, 0, tzinfo=dt.UTC)
SPEC = AuditSpec(schedule="0 3 * * *", timeout_seconds=3600)


def tick(status: AuditStatus, job: JobPhase, now: dt.datetime, spec: AuditSpec = SPEC,
         message: str = "") -> tuple[AuditStatus, list[decide.AuditAction], list[decide.AuditNote]]:
    return decide.audit_tick(spec, status, job, message, now, T0, lambda due, _on_request: f"run-{due}")


def test_a_run_per_fire_time_followed_to_its_end() -> None:
    status, actions, _ = tick(AuditStatus(), JobPhase.MISSING, T0 + dt.timedelta(minutes=30))
    assert actions == [] and status.next_schedule_time == "2026-11-24T03:00:00Z"
    at = T0 + dt.timedelta(hours=1, seconds=5)
    status, actions, notes = tick(status, JobPhase.MISSING, at)
    assert [a.kind for a in actions] == [AuditStep.LAUNCH]
    assert status.run is not None and status.run.id == "run-2026-11-24T03:00:00Z"
    assert [n.reason for n in notes] == ["AuditStarted"]
    # Launched once: the next ticks follow the Job.
    status, actions, _ = tick(status, JobPhase.RUNNING, at + dt.timedelta(seconds=10))
    assert actions == [] and status.run is not None
    status, actions, _ = tick(status, JobPhase.SUCCEEDED, at + dt.timedelta(minutes=5))
    assert [(a.kind, a.run_id) for a in actions] == [(AuditStep.COLLECT, "run-2026-11-24T03:00:00Z")]
    summary = decide.summarize({"mode": "full", "logs": 7, "log_bytes": 700, "totals": {"garbage_bytes": 300},
                                "replication": {"missing": 2, "under": 5}, "garbage_by_bookie": {"b0:3181": 300},
                                "top_pinning": [{"ledger_id": 9, "topic": "persistent://t/n/x",
                                                 "pinned_garbage_bytes": 100, "old_logs": 2}],
                                "findings": ["DATA LOSS: 2 entries"]})
    status = decide.collected(status, summary, "http://r/runs/x/report.html", at + dt.timedelta(minutes=6))
    assert status.run is None and status.last_run is not None and status.last_run.phase == "Succeeded"
    assert status.summary is not None and status.summary.reclaimable_bytes == {"b0:3181": 300}
    assert status.summary.top_pinning_ledgers[0].topic == "persistent://t/n/x"
    assert decide.data_loss(status.summary)[:2] == (True, "EntriesWithoutReplica")
    # The same fire time never runs twice; the next one does.
    status, actions, _ = tick(status, JobPhase.MISSING, at + dt.timedelta(hours=2))
    assert actions == []
    status, actions, _ = tick(status, JobPhase.MISSING, at + dt.timedelta(days=1))
    assert [a.kind for a in actions] == [AuditStep.LAUNCH]


def test_failed_missing_and_overdue_jobs_end_the_run() -> None:
    at = T0 + dt.timedelta(hours=1)
    started, _, _ = tick(AuditStatus(), JobPhase.MISSING, at)
    status, actions, notes = tick(started, JobPhase.FAILED, at + dt.timedelta(minutes=1), message="driver exited 1")
    assert status.run is None and status.last_run is not None and status.last_run.phase == "Failed"
    assert "driver exited 1" in status.last_run.message and [n.reason for n in notes] == ["AuditFailed"]
    status, _, _ = tick(started, JobPhase.MISSING, at + dt.timedelta(minutes=5))
    assert status.last_run is not None and "Job is gone" in status.last_run.message
    status, actions, _ = tick(started, JobPhase.RUNNING, at + dt.timedelta(hours=2))
    assert [a.kind for a in actions] == [AuditStep.STOP] and status.run is None


def test_a_run_missed_by_more_than_the_deadline_is_skipped() -> None:
    status, actions, notes = tick(AuditStatus(), JobPhase.MISSING, T0 + dt.timedelta(hours=3),
                                  spec=AuditSpec(schedule="0 3 * * *", starting_deadline_seconds=600))
    assert actions == [] and status.missed_runs == 1 and [n.reason for n in notes] == ["AuditSkipped"]


def test_compaction_from_findings_only_when_enabled_and_over_the_bound() -> None:
    summary = decide.summarize({"garbage_by_bookie": {"b0": 3 * decide.GIB, "b1": decide.GIB // 2, "gone": 9 << 30}})
    ordinals = {"b0": 0, "b1": 1}
    assert decide.bookies_to_compact(AuditSpec(schedule="0 3 * * *"), summary, ordinals) == []
    spec = AuditSpec.model_validate({"schedule": "0 3 * * *", "compaction": {"enabled": True, "reclaimableGiB": 1}})
    assert decide.bookies_to_compact(spec, summary, ordinals) == [0]


def test_data_loss_is_said_only_by_a_full_audit() -> None:
    assert decide.data_loss(None)[:2] == (False, "NotAudited")
    assert decide.data_loss(decide.summarize({"mode": "metadata"}))[:2] == (False, "NotChecked")
    assert decide.data_loss(decide.summarize({"mode": "full", "replication": {"ok": 10}}))[:2] == (False, "NoneFound")


def test_entries_given_up_on_purpose_are_not_data_loss_but_a_new_hole_beside_them_is() -> None:
    given_up = decide.summarize({"mode": "full", "replication": {"ok": 10, "given_up": 4}})
    assert given_up.given_up_entries == 4 and given_up.data_loss_entries == 0
    assert decide.data_loss(given_up)[:2] == (False, "OnlyGivenUpEntries")
    both = decide.summarize({"mode": "full", "replication": {"ok": 10, "given_up": 4, "missing": 1}})
    assert decide.data_loss(both)[:2] == (True, "EntriesWithoutReplica")
