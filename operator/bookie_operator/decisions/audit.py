"""The storage audit's schedule and what its findings make the operator do: one Spark run per fire time, followed
through its Job; its summary into status; a data-loss finding as a condition; optionally a forced compaction of
the bookies holding more garbage than a bound."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bookie_operator import cron
from bookie_operator.decisions.observed import iso, parse_time
from bookie_operator.models import AuditRunStatus, AuditSpec, AuditStatus, AuditSummary, PinningLedger

GIB = 1 << 30
FINDINGS_KEPT = 12
PINNING_KEPT = 5


class JobPhase(enum.StrEnum):
    """A run's Job as the reconcile observed it."""

    MISSING = "missing"       # not (or no longer) in the API
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class AuditStep(enum.StrEnum):
    LAUNCH = "launch"         # create the run's Job
    COLLECT = "collect"       # the Job succeeded: read the run's summary from the report store
    STOP = "stop"             # over its time: delete the Job (and with it the Spark pods it owns)


@dataclass(frozen=True)
class AuditAction:
    kind: AuditStep
    run_id: str


@dataclass(frozen=True)
class AuditNote:
    type: str                 # Event type: Normal or Warning
    reason: str
    message: str


def audit_tick(spec: AuditSpec, status: AuditStatus, job: JobPhase, job_message: str, now: dt.datetime,
               created: dt.datetime, new_run_id: Callable[[str, bool], str], request: str | None = None,
               ) -> tuple[AuditStatus, list[AuditAction], list[AuditNote]]:
    """Advance the audit schedule one tick; ``job`` is the current run's Job (MISSING without a run),
    ``new_run_id(scheduled_for, on_request)`` names a run, ``request`` is the cluster's audit-request annotation.
    The status alone says what is in progress, so a restarted operator resumes: a run is launched in the tick that
    records it, and followed until its Job ends."""
    status = status.model_copy(deep=True)
    actions: list[AuditAction] = []
    notes: list[AuditNote] = []
    requested = bool(request) and request != status.last_request
    if spec.schedule is None:
        status.next_schedule_time = None
        if requested:
            status.last_request = request
            notes.append(AuditNote("Warning", "AuditRequestIgnored", f"audit requested ({request}) but "
                                   "spec.audit.schedule is not set: the audit and its report store exist only "
                                   "with a schedule"))
        return status, actions, notes
    run = status.run
    if run is not None:
        started = parse_time(run.started_at) or now
        if job is JobPhase.SUCCEEDED:
            actions.append(AuditAction(AuditStep.COLLECT, run.id))
        elif job is JobPhase.FAILED:
            _finish(status, run, "Failed", job_message or "the Spark application failed", now)
            notes.append(AuditNote("Warning", "AuditFailed", f"audit {run.id} failed: {run.message}"))
        elif job is JobPhase.MISSING and (now - started).total_seconds() > 60:
            _finish(status, run, "Failed", "its Job is gone (deleted?)", now)
            notes.append(AuditNote("Warning", "AuditFailed", f"audit {run.id} failed: {run.message}"))
        elif (now - started).total_seconds() > spec.timeout_seconds:
            actions.append(AuditAction(AuditStep.STOP, run.id))
            _finish(status, run, "Failed", f"still running after timeoutSeconds {spec.timeout_seconds}", now)
            notes.append(AuditNote("Warning", "AuditFailed", f"audit {run.id} stopped: {run.message}"))
    if status.run is None and requested:
        # Asked for now: runs before any due fire time, which then runs after it if still within its deadline.
        rid = new_run_id(iso(now), True)
        status.run = AuditRunStatus(id=rid, scheduled_for=iso(now), started_at=iso(now), request=request)
        status.last_request = request
        actions.append(AuditAction(AuditStep.LAUNCH, rid))
        notes.append(AuditNote("Normal", "AuditStarted", f"audit {rid} ({spec.mode} mode) started on request "
                               f"({request})"))
    if status.run is None:
        fire = cron.due_fire(spec.schedule, now, parse_time(status.last_schedule_time) or created,
                             spec.starting_deadline_seconds)
        if fire is not None and fire.in_time:
            rid = new_run_id(iso(fire.at), False)
            status.run = AuditRunStatus(id=rid, scheduled_for=iso(fire.at), started_at=iso(now))
            actions.append(AuditAction(AuditStep.LAUNCH, rid))
            notes.append(AuditNote("Normal", "AuditStarted", f"audit {rid} ({spec.mode} mode) started"))
        elif fire is not None:
            status.missed_runs += 1
            notes.append(AuditNote("Warning", "AuditSkipped", f"audit for {iso(fire.at)} skipped: missed by "
                                   f"{fire.late_seconds:.0f}s (> startingDeadlineSeconds "
                                   f"{spec.starting_deadline_seconds})"))
        if fire is not None:
            status.last_schedule_time = iso(fire.at)
    status.next_schedule_time = iso(cron.next_after(spec.schedule, now))
    return status, actions, notes


def _finish(status: AuditStatus, run: AuditRunStatus, phase: str, message: str, now: dt.datetime) -> None:
    done = run.model_copy(update={"phase": phase, "message": message, "completed_at": iso(now)})
    status.last_run = done
    status.run = None


def audit_tick_failed(status: AuditStatus, message: str, now: dt.datetime) -> AuditStatus:
    """The run could not even start (its Job was refused)."""
    status = status.model_copy(deep=True)
    if status.run is not None:
        _finish(status, status.run, "Failed", message, now)
    return status


def collected(status: AuditStatus, summary: AuditSummary, report: str, now: dt.datetime) -> AuditStatus:
    """The run's summary was read: the run succeeded and its findings are the cluster's."""
    status = status.model_copy(deep=True)
    if status.run is not None:
        _finish(status, status.run.model_copy(update={"report": report}), "Succeeded", "", now)
    status.summary = summary
    status.last_success_time = iso(now)
    return status


def summarize(raw: dict[str, Any]) -> AuditSummary:
    """The status summary of a run's ``summary.json`` (``bookie_audit.run.Summary``), bounded in size."""
    totals = raw.get("totals") or {}
    replication = raw.get("replication") or {}
    pins = [PinningLedger(ledger_id=int(p["ledger_id"]), topic=p.get("topic"),
                          pinned_garbage_bytes=int(p.get("pinned_garbage_bytes") or 0),
                          old_logs=int(p.get("old_logs") or 0))
            for p in (raw.get("top_pinning") or [])[:PINNING_KEPT]]
    return AuditSummary(
        mode=str(raw.get("mode") or ""), logs=int(raw.get("logs") or 0), log_bytes=int(raw.get("log_bytes") or 0),
        garbage_bytes=int(totals.get("garbage_bytes") or 0),
        reclaimable_bytes={str(k): int(v) for k, v in (raw.get("garbage_by_bookie") or {}).items()},
        top_pinning_ledgers=pins, data_loss_entries=int(replication.get("missing") or 0),
        given_up_entries=int(replication.get("given_up") or 0),
        under_replicated_entries=int(replication.get("under") or 0),
        under_replicated_ledgers=int(totals.get("underreplicated_marks") or 0),
        flagged=int(totals.get("flagged") or 0), findings=[str(f) for f in raw.get("findings") or []][:FINDINGS_KEPT])


def bookies_to_compact(spec: AuditSpec, summary: AuditSummary, ordinal_of_bookie: dict[str, int]) -> list[int]:
    """Ordinals the audit found holding more garbage than ``compaction.reclaimableGiB`` (if that is enabled)."""
    if not spec.compaction.enabled:
        return []
    bound = spec.compaction.reclaimable_gib * GIB
    return sorted(ordinal_of_bookie[b] for b, garbage in summary.reclaimable_bytes.items()
                  if garbage > bound and b in ordinal_of_bookie)


def data_loss(summary: AuditSummary | None) -> tuple[bool, str, str]:
    """(the DataLoss condition, its reason, its message) from the last audit's findings."""
    if summary is None:
        return False, "NotAudited", "no complete audit yet"
    if summary.mode != "full":
        return False, "NotChecked", f"the last audit ran in {summary.mode or 'metadata'} mode, which reads no entry"
    if summary.data_loss_entries:
        return True, "EntriesWithoutReplica", (f"the last audit found {summary.data_loss_entries} entries with no "
                                               "replica on any bookie of their write set")
    if summary.given_up_entries:
        return False, "OnlyGivenUpEntries", (f"the last audit found no entry lost beyond the {summary.given_up_entries}"
                                             " given up on purpose (spec.acceptDataLoss, recorded in their ledgers' "
                                             "metadata)")
    return False, "NoneFound", "the last audit found every entry it checked on some bookie of its write set"
