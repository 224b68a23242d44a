"""The catch-up read probe (bench/read_cpu.py) runs on a tiny workload; numbers are not checked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "read_cpu.py"


def test_read_cpu_quick_run_reports_both_readings() -> None:
    result = run_bench(BENCH, "--quick", timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rounds = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(rounds) == 1
    for reading in ("cold", "cached"):
        assert rounds[0][f"{reading}_entries_per_s"] > 0 and rounds[0][f"{reading}_cpu_s_per_100k"] >= 0
