"""The whole audit (run_audit / bookie-audit run): tables, summary and findings; bad input said clearly."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bookie_audit.cli import main
from bookie_audit.files import LogInput
from bookie_audit.run import TABLES, AuditOptions, run_audit

from tests.pipeline.expected import log_usage, status_counts


def test_every_table_is_written_and_the_summary_matches(audit_out: Any, fleet: Any) -> None:
    out, summary = audit_out
    for table in TABLES:
        if table not in ("records", "rest_bookies"):  # written only with keep_records / --rest-bookie
            assert os.path.isfile(os.path.join(out, f"{table}.parquet")), table
    usage = log_usage(fleet.fleet, fleet.manifest.started_ms)
    assert summary.totals["garbage_bytes"] == sum(u.garbage for u in usage.values())
    assert summary.totals["total_bytes"] == sum(u.total for u in usage.values())
    assert summary.totals["dead_logs"] == 4
    counts = status_counts(fleet.fleet)
    assert {k: summary.replication.get(k, 0) for k in counts} == dict(counts)
    assert summary.replication["over_replicated"] == 16
    assert summary.replication["checksum_failures"] == 0
    assert summary.totals["flagged"] == 2  # the truncated log, seen by both readings
    assert summary.warnings == []
    assert summary.bookies == ["127.0.0.1:3181", "127.0.0.2:3181", "127.0.0.3:3181"]
    text = "\n".join(summary.findings)
    assert "DATA LOSS: 1 entries" in text and "ledger 1 " in text and "topic-1" in text
    with open(os.path.join(out, "report.html")) as f:
        assert "persistent://public/default/topic-1" in f.read()  # the pinning ledger's topic, by name


def test_problem_entries_table_lists_only_problems(audit_out: Any, fleet: Any) -> None:
    out, _ = audit_out
    rows = pq.read_table(os.path.join(out, "replication_problems.parquet")).to_pylist()
    assert {(r["ledger_id"], r["status"]) for r in rows if r["status"] != "ok"} == \
        {(7, "under"), (8, "missing")}
    assert all(r["status"] != "ok" or r["misplaced"] > 0 for r in rows)


def test_a_snapshot_older_than_the_logs_is_said(spark: Any, fleet: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(fleet.fleet.bookie_dirs["127.0.0.1:3181"], logs / "bookie1")
    newer = next((logs / "bookie1" / "current").glob("*.log"))
    later = time.time() + 3600
    os.utime(newer, (later, later))
    opts = AuditOptions(logs=[LogInput(str(logs))], metadata=fleet.snapshot_dir, out=str(tmp_path / "out"),
                        mode="metadata")
    summary = run_audit(spark, opts)
    assert any(w.startswith("stale snapshot") for w in summary.warnings)
    assert summary.replication == {}
    assert "stale snapshot" in (tmp_path / "out" / "report.html").read_text()


def test_empty_input_is_a_clear_error(fleet: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code = main(["run", "--logs", str(tmp_path / "empty"), "--metadata", fleet.snapshot_dir,
                 "--out", str(tmp_path / "out")])
    assert code == 2
    assert "no entry logs (<hex>.log files) found under" in capsys.readouterr().err


def test_missing_paths_and_snapshots_are_clear_errors(fleet: Any, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--logs", str(tmp_path / "nope"), "--metadata", fleet.snapshot_dir,
                 "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["run", "--logs", fleet.fleet.root, "--metadata", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "not a metadata snapshot" in capsys.readouterr().err
