"""The scheduled storage audit: its standing objects (report store, Spark's identity), one Job per run followed
to its end, the run's summary read from the report store into ``status.audit``, and what the findings make the
operator do (the ``DataLoss`` condition with a Warning Event, an optional forced compaction)."""

from __future__ import annotations

from typing import Any, assert_never

from bookie_operator import audit_builders, builders
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.decisions import audit as decide
from bookie_operator.decisions.audit import AuditAction, AuditStep, JobPhase
from bookie_operator.kube import KubeError
from bookie_operator.models import AUDIT_REQUEST_ANNOTATION
from bookie_operator.reconcile.apply import apply_one
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.ports import Obj


def job_phase(job: Obj | None) -> tuple[JobPhase, str]:
    """A Job's phase, from its conditions (Complete / Failed) or its counters."""
    if job is None:
        return JobPhase.MISSING, ""
    status = job.get("status") or {}
    for c in status.get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "SuccessCriteriaMet"):
            return JobPhase.SUCCEEDED, ""
        if c.get("status") == "True" and c.get("type") in ("Failed", "FailureTarget"):
            return JobPhase.FAILED, str(c.get("message") or c.get("reason") or "")
    if status.get("succeeded"):
        return JobPhase.SUCCEEDED, ""
    if status.get("failed"):
        return JobPhase.FAILED, "the spark-submit pod failed"
    return JobPhase.RUNNING, ""


async def run_audit_schedule(t: Tick) -> None:
    spec = t.spec.audit
    for obj in audit_builders.desired_objects(t.owner, t.spec, t.op.audit_cluster_role):
        await apply_one(t, obj)
    run = t.status.audit.run
    phase, message = await _observe_run(t, run.id) if run is not None else (JobPhase.MISSING, "")
    request = (t.body["metadata"].get("annotations") or {}).get(AUDIT_REQUEST_ANNOTATION)
    status, actions, notes = decide.audit_tick(spec, t.status.audit, phase, message, t.now, t.created,
                                               lambda due, on_request: audit_builders.run_id(t.name, due, on_request),
                                               request=request)
    t.status.audit = status
    for note in notes:
        t.event(note.type, note.reason, note.message)
    for action in actions:
        await _perform(t, action)
    _data_loss_condition(t)


async def _perform(t: Tick, action: AuditAction) -> None:
    match action.kind:
        case AuditStep.LAUNCH:
            await _delete_finished_spark_pods(t, keep=t.status.audit.last_run.id if t.status.audit.last_run else None)
            ordinals = sorted(b.ordinal for b in t.bookies if b.exists and b.ordinal != t.decommissioning)
            try:
                await t.op.kube.create(audit_builders.audit_job(t.owner, t.spec, action.run_id, ordinals))
            except KubeError as exc:
                t.event("Warning", "AuditFailed", f"audit {action.run_id}: its Job cannot be created: {exc}")
                t.status.audit = decide.audit_tick_failed(t.status.audit, f"Job not created: {exc}", t.now)
        case AuditStep.COLLECT:
            await _collect(t, action.run_id)
        case AuditStep.STOP:
            await t.op.kube.delete("Job", t.namespace, action.run_id, propagation="Background")
            await _delete_spark_pods(t, action.run_id)
        case _:
            assert_never(action.kind)


async def _collect(t: Tick, run_id: str) -> None:
    """Read the run's summary from the report store; until it answers, the run stays in progress."""
    base = await _reports_base(t)
    if base is None:
        t.wait("the audit report store to be running")
        return
    try:
        raw: dict[str, Any] = await t.op.fetch_json(f"{base}/runs/{run_id}/summary.json")
    except BookieApiError as exc:
        if exc.status == 404:  # the run ended without publishing its results
            t.status.audit = decide.audit_tick_failed(t.status.audit, "the run published no summary to the report "
                                                      f"store (kubectl logs {run_id}-driver)", t.now)
            t.event("Warning", "AuditFailed", f"audit {run_id} failed: {t.status.audit.last_run.message}"
                    if t.status.audit.last_run else f"audit {run_id} failed")
            return
        t.problems.append(f"audit {run_id}: its summary cannot be read from the report store: {exc}")
        return
    summary = decide.summarize(raw)
    report = f"{audit_builders.reports_url(t.name, t.namespace, t.spec.cluster_domain)}/runs/{run_id}/report.html"
    t.status.audit = decide.collected(t.status.audit, summary, report, t.now)
    t.event("Normal", "AuditCompleted", f"audit {run_id}: {summary.logs} entry logs, "
            f"{_gib(summary.garbage_bytes)} of garbage; report: {report}")
    if summary.data_loss_entries:
        t.event("Warning", "DataLoss", f"audit {run_id} found {summary.data_loss_entries} entries with no replica "
                "on any bookie of their write set (see the report's replication problems)")
    ordinal_of = {b.bookie_id: b.ordinal for b in t.bookies}
    for ordinal in decide.bookies_to_compact(t.spec.audit, summary, ordinal_of):
        await _compact(t, ordinal, summary, run_id)


async def _compact(t: Tick, ordinal: int, summary: Any, run_id: str) -> None:
    pod = builders.pod_name(t.name, ordinal)
    garbage = next((v for b, v in summary.reclaimable_bytes.items()
                    if b == t.bookie_id(ordinal)), 0)
    try:
        await t.admins[ordinal].trigger_gc(True, True)
    except (BookieApiError, KeyError) as exc:
        t.event("Warning", "AuditCompactionFailed", f"{pod}: {exc}")
        return
    last = t.status.audit.last_run
    if last is not None:
        last.compacted.append(ordinal)
    t.event("Normal", "AuditCompaction", f"{pod}: forced compaction after audit {run_id} found {_gib(garbage)} of "
            f"garbage (> {t.spec.audit.compaction.reclaimable_gib:g} GiB)")


def _gib(n: int) -> str:
    return f"{n / decide.GIB:.2f} GiB"


async def _reports_base(t: Tick) -> str | None:
    """The report store by its pod's address: the operator may run outside the cluster's DNS."""
    selector = ",".join(f"{k}={v}" for k, v in audit_builders.labels(t.name, "reports").items()
                        if k.startswith("app.kubernetes.io/") and k != "app.kubernetes.io/managed-by")
    for pod in await t.op.kube.list("Pod", t.namespace, selector):
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        if ready and status.get("podIP") and not pod["metadata"].get("deletionTimestamp"):
            return f"http://{status['podIP']}:{audit_builders.REPORTS_PORT}"
    return None


async def _observe_run(t: Tick, run_id: str) -> tuple[JobPhase, str]:
    """The run's outcome: its Job's, except that spark-submit ends well whatever the driver did, so a complete Job
    whose driver pod failed is a failed run."""
    phase, message = job_phase(await t.op.kube.get("Job", t.namespace, run_id))
    if phase not in (JobPhase.SUCCEEDED, JobPhase.FAILED):
        return phase, message
    pods = await t.op.kube.list("Pod", t.namespace, f"{audit_builders.AUDIT_RUN_LABEL}={run_id},spark-role=driver")
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Failed":
            return JobPhase.FAILED, _driver_message(pod, run_id)
    return phase, message


def _driver_message(pod: Obj, run_id: str) -> str:
    """Why the driver failed: its exit code and termination message (its log has the rest)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or {}
        if term:
            text = str(term.get("message") or "").strip().splitlines()
            return f"the driver exited {term.get('exitCode')}" + (f": {text[-1][:300]}" if text else "") + \
                f" (kubectl logs {run_id}-driver)"
    return f"the driver failed (kubectl logs {run_id}-driver)"


async def _delete_finished_spark_pods(t: Tick, keep: str | None) -> None:
    """Spark leaves its driver pods (their logs) behind: keep only the last run's."""
    selector = f"{builders.CLUSTER_LABEL}={t.name},spark-role=driver"
    for pod in await t.op.kube.list("Pod", t.namespace, selector):
        run = pod["metadata"].get("labels", {}).get(audit_builders.AUDIT_RUN_LABEL)
        if run != keep and ((pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
            await t.op.kube.delete("Pod", t.namespace, pod["metadata"]["name"])


async def _delete_spark_pods(t: Tick, run_id: str) -> None:
    for pod in await t.op.kube.list("Pod", t.namespace, f"{audit_builders.AUDIT_RUN_LABEL}={run_id}"):
        await t.op.kube.delete("Pod", t.namespace, pod["metadata"]["name"])


def _data_loss_condition(t: Tick) -> None:
    if t.spec.audit.schedule is None and t.status.audit.summary is None and t.was("DataLoss") is None:
        return  # a cluster never audited carries no DataLoss condition
    lost, reason, message = decide.data_loss(t.status.audit.summary)
    t.condition("DataLoss", lost, reason, message)
