"""The benchmark suite's harness (bench/run_all.py) runs end to end on a tiny workload: both clusters, BookKeeper's
BenchThroughputLatency and BenchReadThroughputLatency, our client's adds, catch-up and tailing reads. Numbers
are not checked (no timings in tests), only that every workload produced a point for each implementation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run_all.py"


def test_run_all_quick_measures_every_workload_on_both_implementations(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCH), "--quick", "--workdir", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    points = json.loads(result.stdout.strip().splitlines()[-1])
    seen = {(p["workload"], p["impl"], p["params"].get("proto")) for p in points}
    for impl in ("java", "ours"):
        assert {("btl", impl, "v3"), ("btl", impl, "v2"), ("pyclient", impl, "v3"), ("catchup-java", impl, None),
                ("catchup-py", impl, None), ("tail-py", impl, None)} <= seen
    # A failed point is logged and kept as NaN rather than losing the run; the add and catch-up workloads of
    # our own code must not fail.
    assert all(p["ops_per_s"] > 0 and p["count"] > 0 for p in points
               if p["workload"] in ("btl", "pyclient", "catchup-py")), result.stdout[-3000:]
    assert "| v3 | 1/1/1 | 1024 B |" in result.stdout
    assert "catch-up, BenchReadThroughputLatency" in result.stdout
