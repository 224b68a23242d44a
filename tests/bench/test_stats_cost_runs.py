"""The statistics-cost benchmark (bench/stats_cost.py) runs both bookies on a tiny workload; numbers are not
checked (no timings in tests)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stats_cost.py"


def test_stats_cost_quick_run_measures_both_bookies() -> None:
    result = run_bench(BENCH, "--quick", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted((r["round"], r["mode"]) for r in data["rounds"]) == [(0, "off"), (0, "on"), (1, "off"), (1, "on")]
    assert all(r["adds_per_s"] > 0 for r in data["rounds"])
    assert set(data["recorder_ns"]) == {"OpStat", "NullOpStat"}
