"""The client append probe (bench/client_cpu.py) runs on a tiny workload; numbers are not checked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "client_cpu.py"


def test_client_cpu_quick_run_reports_cpu_per_append() -> None:
    result = run_bench(BENCH, "--quick", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rounds = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(rounds) == 1
    assert rounds[0]["appends_per_s"] > 0 and rounds[0]["client_us_per_append"] > 0
    assert rounds[0]["client_busy"] > 0 and 0 < rounds[0]["p50_ms"] <= rounds[0]["p99_ms"]
