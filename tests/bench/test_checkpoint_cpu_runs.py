"""The checkpoint append probe (bench/checkpoint_cpu.py) runs on a tiny workload; numbers are not checked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "checkpoint_cpu.py"


def test_checkpoint_cpu_quick_run_reports_each_size(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    sizes = json.loads(result.stdout.strip().splitlines()[-1])
    assert [s["size"] for s in sizes] == [100, 1024]
    assert all(s["us_per_entry"] >= 0 and s["longest_gil_wait_ms"] >= 0 for s in sizes)
