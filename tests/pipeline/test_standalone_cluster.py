"""The same audit via spark-submit on a real standalone cluster (master + 2 workers) gives the same tables."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bookie_audit.cluster import StandaloneCluster, cli_script, daemon_env, spark_submit
from bookie_audit.run import TABLES

from tests.support.spark_jvm import SPARK_TEST_JVM_OPTIONS


def _rows(out: str, table: str) -> list[tuple[Any, ...]]:
    path = os.path.join(out, f"{table}.parquet")
    rows = pq.read_table(path).to_pylist()
    return sorted(tuple((k, repr(v)) for k, v in sorted(r.items())) for r in rows)


def test_spark_submit_to_a_standalone_cluster_gives_the_local_tables(audit_out: Any, fleet: Any,
                                                                     tmp_path: Path) -> None:
    local_out, _ = audit_out
    out = tmp_path / "cluster-out"
    with StandaloneCluster(tmp_path / "spark", workers=2, cores_per_worker=1, memory_per_worker="768m") as cluster:
        proc = subprocess.run(
            [spark_submit(), "--master", cluster.master_url, "--conf", "spark.executor.memory=512m",
             "--conf", f"spark.executor.extraJavaOptions={' '.join(SPARK_TEST_JVM_OPTIONS)}",
             "--conf", "spark.ui.enabled=false", cli_script(), "run", "--logs", fleet.fleet.root,
             "--metadata", fleet.snapshot_dir, "--out", str(out), "--min-age-days", "10", "--split-mb", "1"],
            env=daemon_env(), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
        worker_logs = [p.read_text(errors="replace") for p in sorted((tmp_path / "spark").glob("worker*.log"))]
    assert len(worker_logs) == 2 and all("Asked to launch executor" in log for log in worker_logs)  # both ran it
    assert "DATA LOSS: 1 entries" in proc.stdout
    # The progress display (spark-submit merges the Python driver's stderr into its stdout).
    assert "] full scan of every record (replication)" in proc.stdout + proc.stderr
    for table in TABLES:
        if table not in ("records", "rest_bookies"):  # written only with keep_records / --rest-bookie
            assert _rows(str(out), table) == _rows(local_out, table), table
    assert not any(p.poll() is None for p in cluster.procs)
