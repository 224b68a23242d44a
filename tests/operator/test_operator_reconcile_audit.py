"""The whole reconcile over a scheduled audit, without a cluster: the run's Job created once (also across an
operator restart); a Job that completes while its driver pod failed is a failed run (spark-submit ends well
whatever the driver did); a run whose driver succeeded has its summary read from the report store into status,
with the DataLoss condition and Warning Event and the forced compaction of the bookies over the bound."""

from __future__ import annotations

from typing import Any

from bookie_operator import audit_builders
from bookie_operator.bookie_client import BookieApiError

from tests.operator.fakes import NS, World, cluster_spec

AUDIT = {"schedule": "48 2 * * *", "mode": "full", "compaction": {"enabled": True, "reclaimableGiB": 1}}


async def launched() -> tuple[World, str]:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(audit=AUDIT))
    for _ in range(30):                     # the clock starts at 02:47:30
        await w.tick()
        if w.status.get("audit", {}).get("run"):
            break
    run = w.status["audit"]["run"]["id"]
    assert run == "bk-audit-20261124t0248"
    return w, run


def finish(w: World, run: str, driver_phase: str, exit_code: int) -> None:
    job = w.kube.objects[("Job", NS, run)]
    job["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    w.kube.objects[("Pod", NS, f"{run}-driver")] = {
        "kind": "Pod", "metadata": {"name": f"{run}-driver", "namespace": NS,
                                    "labels": {audit_builders.AUDIT_RUN_LABEL: run, "spark-role": "driver"}},
        "status": {"phase": driver_phase, "containerStatuses": [
            {"state": {"terminated": {"exitCode": exit_code, "message": "OSError: report store unreachable"}}}]}}


def report_store(w: World, summaries: dict[str, Any]) -> None:
    labels = {k: v for k, v in audit_builders.labels("bk", "reports").items()}
    w.kube.objects[("Pod", NS, "bk-audit-reports-1")] = {
        "kind": "Pod", "metadata": {"name": "bk-audit-reports-1", "namespace": NS, "labels": labels},
        "status": {"podIP": "10.0.9.9", "conditions": [{"type": "Ready", "status": "True"}]}}

    async def fetch(url: str) -> Any:
        if url not in summaries:
            raise BookieApiError(f"GET {url}: HTTP 404", 404)
        return summaries[url]

    w.operator.fetch_json = fetch


async def test_the_job_is_created_once_also_across_an_operator_restart() -> None:
    w, run = await launched()
    w.operator = w.new_operator()
    for _ in range(5):
        await w.tick()
    assert w.kube.created.count(f"Job/{run}") == 1
    assert {"ServiceAccount/bk-audit", "RoleBinding/bk-audit", "Deployment/bk-audit-reports"} <= set(w.kube.applied)


async def test_a_complete_job_whose_driver_failed_is_a_failed_run() -> None:
    w, run = await launched()
    finish(w, run, "Failed", 1)
    await w.tick()
    last = w.status["audit"]["lastRun"]
    assert last["phase"] == "Failed" and "the driver exited 1" in last["message"]
    assert "report store unreachable" in last["message"] and "run" not in w.status["audit"]
    assert any(run in m for m in w.kube.reasons("AuditFailed"))


async def test_a_successful_run_summary_in_status_data_loss_and_compaction() -> None:
    w, run = await launched()
    garbage = {w.bookie_id(0): 3 << 30, w.bookie_id(1): 1 << 20, w.bookie_id(2): 2 << 30}
    report_store(w, {f"http://10.0.9.9:8000/runs/{run}/summary.json": {
        "mode": "full", "logs": 12, "log_bytes": 5 << 30, "totals": {"garbage_bytes": sum(garbage.values())},
        "replication": {"ok": 100, "missing": 1, "under": 4}, "garbage_by_bookie": garbage,
        "top_pinning": [{"ledger_id": 7, "topic": None, "pinned_garbage_bytes": 123, "old_logs": 2}],
        "findings": ["DATA LOSS: 1 entries have no replica on any bookie of their write set"]}})
    finish(w, run, "Succeeded", 0)
    await w.tick()
    audit = w.status["audit"]
    assert audit["lastRun"]["phase"] == "Succeeded" and audit["lastRun"]["compacted"] == [0, 2]
    assert audit["lastRun"]["report"] == f"{audit_builders.reports_url('bk', NS)}/runs/{run}/report.html"
    assert audit["summary"]["reclaimableBytes"] == garbage and audit["summary"]["dataLossEntries"] == 1
    lost = next(c for c in w.status["conditions"] if c["type"] == "DataLoss")
    assert (lost["status"], lost["reason"]) == ("True", "EntriesWithoutReplica")
    assert len(w.kube.reasons("DataLoss")) == 1 and len(w.kube.reasons("AuditCompaction")) == 2
    assert [w.bookie(o).calls.count("trigger_gc") for o in range(3)] == [1, 0, 1]
    for _ in range(5):                      # announced once: later ticks have nothing to collect
        await w.tick()
    assert len(w.kube.reasons("DataLoss")) == 1 and len(w.kube.reasons("AuditCompleted")) == 1


async def test_a_run_that_published_nothing_fails() -> None:
    w, run = await launched()
    report_store(w, {})
    finish(w, run, "Succeeded", 0)
    await w.tick()
    assert w.status["audit"]["lastRun"]["phase"] == "Failed"
    assert "published no summary" in w.status["audit"]["lastRun"]["message"]
