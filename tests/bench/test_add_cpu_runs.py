"""The per-add CPU probe (bench/add_cpu.py) runs on a tiny workload, on our bookie and on Apache BookKeeper's;
numbers are not checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "add_cpu.py"


@pytest.mark.parametrize("impl", ["ours", "java"])
def test_add_cpu_quick_run_reports_cpu_per_add(impl: str) -> None:
    result = run_bench(BENCH, "--quick", "--impl", impl, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rounds = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(rounds) == 1
    assert rounds[0]["adds_per_s"] > 0 and rounds[0]["process_us_per_add"] >= 0
