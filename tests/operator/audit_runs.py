"""What the tests of the operator's storage audit share: where a bookie's ledger disk is on this machine, a copy
of it as the audit will find it, a run requested now and awaited, the run's tables fetched from the
report store, and the audit of the copy in this process to compare them with."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bookie_audit.files import LogInput
from bookie_audit.run import TABLES, AuditOptions, run_audit
from bookie_operator import audit_builders
from bookie_operator.models import AUDIT_REQUEST_ANNOTATION, GROUP, PLURAL

from tests.operator.conftest import get_cluster
from tests.pipeline.tables import audit_tables
from tests.support.kube import KubeTarget, wait_for
from tests.support.live_entry_logs import records_on_a_live_disk


def pod_ip(kube: KubeTarget, ns: str, pod: str) -> str:
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert obj is not None and obj["status"].get("podIP")
    return str(obj["status"]["podIP"])


def ledger_dir(kube: KubeTarget, ns: str, cluster: str, ordinal: int) -> Path:
    """The host directory behind a bookie's first ledger volume (the local Kubernetes' hostPath volumes)."""
    claim = kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/ledgers-0-{cluster}-{ordinal}")
    assert claim is not None
    pv = kube.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
    assert pv is not None
    return Path(pv["spec"]["hostPath"]["path"])


def entries_on_disk(ledger_dir: Path) -> set[tuple[int, int]]:
    """(ledger, entry) of every record in the directory's entry logs."""
    return {(r.ledger_id, r.entry_id) for r in records_on_a_live_disk(ledger_dir)}


def copy_logs(ledger_dir: Path, to: Path) -> None:
    """What a copy of the disk gives the audit: the cookie and the entry logs (not the index)."""
    shutil.copytree(ledger_dir / "current", to / "current", ignore=shutil.ignore_patterns("ledgers", "locations"))


def run_requested_audit(kube: KubeTarget, ns: str, name: str, audit: dict[str, Any],
                        timeout: float = 900) -> dict[str, Any]:
    """Sets ``spec.audit`` (a daily schedule unless it names one) and asks for a run now, as a user does with the
    audit-request annotation; waits for that run to end and returns status.audit's lastRun."""
    request = f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H:%M:%SZ}-{uuid.uuid4().hex[:6]}"
    kube.kubectl("-n", ns, "patch", f"{PLURAL}.{GROUP}", name, "--type", "merge", "-p", json.dumps(
        {"metadata": {"annotations": {AUDIT_REQUEST_ANNOTATION: request}},
         "spec": {"audit": {"schedule": "0 3 * * *", **audit}}}))

    def finished() -> dict[str, Any] | None:
        last = get_cluster(kube, ns, name).get("status", {}).get("audit", {}).get("lastRun")
        return last if last and last.get("request") == request else None

    last: dict[str, Any] = wait_for(finished, timeout, interval=2, what=f"the audit run requested ({request})")
    if last["phase"] != "Succeeded":
        print_spark_logs(kube, ns, last["id"])
    return last


def print_spark_logs(kube: KubeTarget, ns: str, run: str) -> None:
    """The submitter's and the driver's output, when a run failed."""
    for pod in kube.pods(ns, f"{audit_builders.AUDIT_RUN_LABEL}={run}"):
        name = pod["metadata"]["name"]
        logs = kube.kubectl("-n", ns, "logs", name, check=False)
        print(f"\n[{name}]\n{logs.stdout[-8000:]}{logs.stderr[-2000:]}")


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        return bytes(r.read())


def fetch_run(kube: KubeTarget, ns: str, name: str, run: str, to: Path) -> str:
    """The run's tables and summary from the report store into ``to``; returns its report's text."""
    reports = kube.pods(ns, "app.kubernetes.io/component=reports,app.kubernetes.io/instance=" + name)
    base = f"http://{reports[0]['status']['podIP']}:{audit_builders.REPORTS_PORT}/runs/{run}"
    to.mkdir(parents=True)
    for table in [t for t in TABLES if t not in ("records", "rest_bookies")] + ["summary"]:
        suffix = ".json" if table == "summary" else ".parquet"
        (to / f"{table}{suffix}").write_bytes(get(f"{base}/{table}{suffix}"))
    return get(f"{base}/report.html").decode()


def audit_copies(copies: dict[str, str], snapshot: Path, out: Path, as_of_ms: int | None) -> None:
    """The full audit of ``copies`` (path -> bookie id) in this process, as of the cluster's run (or now)."""
    from bookie_audit.spark import build_session

    shutil.rmtree(out, ignore_errors=True)
    spark = build_session("local[2]", app_name="audit-copy", shuffle_partitions=4)
    try:
        run_audit(spark, AuditOptions(logs=[LogInput(p, bookie) for p, bookie in copies.items()],
                                      metadata=str(snapshot), out=str(out), mode="full", min_age_days=0,
                                      as_of_ms=as_of_ms))
    finally:
        spark.stop()


def assert_same_tables(live: Path, live_roots: dict[str, str], copy: Path, copy_roots: dict[str, str]) -> None:
    """Every table of the two audits equal, row for row (each input root replaced by its name); the summaries
    differ only in when each metadata snapshot was taken."""
    got, want = audit_tables(live, live_roots), audit_tables(copy, copy_roots)
    for tables in (got, want):
        tables["summary"] = [json.dumps({k: v for k, v in json.loads(tables["summary"][0]).items()
                                         if k != "snapshot_started_ms"})]
    assert got.keys() == want.keys()
    for table in got:
        only_live = sorted(set(got[table]) - set(want[table]))[:5]
        only_copy = sorted(set(want[table]) - set(got[table]))[:5]
        assert got[table] == want[table], f"{table}: only in the live audit {only_live}, only in the copy's {only_copy}"
