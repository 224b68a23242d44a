"""The start-up benchmark of a bookie with many entry logs (bench/entry_logs_bench.py) runs on a tiny store, with and
without ledgers maps in its logs; numbers are not checked (no timings in tests), only what it counted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "entry_logs_bench.py"


def test_entry_logs_bench_quick_run_counts_the_logs_it_wrote(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    res = json.loads(result.stdout.strip().splitlines()[-1])
    assert res["maps"]["logs"] >= 100 and res["maps"]["scanned"] == 0
    assert res["scans"]["logs"] >= 100 and res["scans"]["scanned"] >= 100
