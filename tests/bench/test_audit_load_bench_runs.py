"""The audit-load benchmark (bench/audit_load_bench.py) runs on a tiny fleet: every mode measures adds, and the
readers of the full-scan modes read entry-log bytes through the bookies; numbers are not checked (no timings in
tests), only that each point did its work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "audit_load_bench.py"


@pytest.mark.timeout(1100)  # the quick run may take 900 s on a loaded machine, then stops its processes
def test_audit_load_bench_quick_run_measures_every_mode() -> None:
    result = run_bench(BENCH, "--quick", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    points = json.loads(result.stdout.strip().splitlines()[-1])
    assert [p["mode"] for p in points] == ["no audit", "full scan, default throttle (50 MB/s per bookie)",
                                           "full scan, throttle off"]
    assert all(p["adds"] > 0 for p in points)
    assert points[0]["read_mb_s"] == 0 and all(p["read_mb_s"] > 0 for p in points[1:])
