"""The GC benchmark's harness runs end to end on a tiny workload (numbers are not checked: no timings in tests)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gc_bench.py"


def test_gc_bench_quick_run(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    res = json.loads(result.stdout.strip().splitlines()[-1])
    assert res["unthrottled"]["copied_mb"] > 0 and res["by_bytes"]["mb_s"] > 0 and res["reclaim_s"] > 0
    assert "| compaction, unthrottled" in result.stdout
