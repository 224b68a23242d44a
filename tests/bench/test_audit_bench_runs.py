"""The audit benchmark (bench/audit_bench.py) runs on a tiny store: the plain scans, Spark with one and two local
workers, and the metadata mode; numbers are not checked (no timings in tests), only what each read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "audit_bench.py"


@pytest.mark.timeout(1100)  # the quick run may take 900 s on a loaded machine, then stops its processes
def test_audit_bench_quick_run_reads_every_record(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    res = json.loads(result.stdout.strip().splitlines()[-1])
    assert res["logs"] == 2 and res["records"] > 0 and res["metadata_rows"] > 0
    assert all(res[k] > 0 for k in ("python_scan_s", "spark_local1_s", "spark_local2_s", "metadata_s"))
