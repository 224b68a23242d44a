"""The file-removal stall probe (bench/file_removal_stall.py) runs on a tiny file; numbers are not checked,
only that both ways of removing were measured while fdatasyncs went on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "file_removal_stall.py"


def test_file_removal_stall_quick_run_measures_both_ways_of_removing(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(summary) == ["steps", "unlink"]
    assert all(s["syncs"] >= 1 and s["max_ms"] >= s["median_ms"] >= 0 for s in summary.values())
    assert list(tmp_path.iterdir()) == [], "the run's files are removed"


def test_file_removal_stall_refuses_a_size_of_nothing(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--mib", "0", "--workdir", str(tmp_path), timeout=60)
    assert result.returncode == 2 and "--mib and --rounds must be positive" in result.stderr
