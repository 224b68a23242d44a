"""The add benchmark's harness runs end to end on a tiny workload, in a work directory it creates (numbers are not
checked: no timings in tests)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "add_bench.py"


def test_add_bench_quick_run_measures_both_implementations(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path / "new"), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    assert {(r["impl"], r["size"]) for r in rows} == {(i, s) for i in ("python", "java") for s in (100, 1024, 16384)}
    assert all(r["adds_per_s"] > 0 for r in rows)
    assert "| 1024 B |" in result.stdout
