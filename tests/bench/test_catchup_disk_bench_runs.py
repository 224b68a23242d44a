"""The catch-up-from-disk bench (bench/catchup_disk_bench.py) runs on a tiny backlog, on our bookies and on Apache
BookKeeper's; its rates are not checked, but its proof that the reading came from disk is: nothing of the bookies'
files left in the page cache after the drop, and the bookies reading at least the backlog's bytes from storage."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "catchup_disk_bench.py"


def test_catchup_disk_quick_run_reads_the_backlog_from_disk_on_both_implementations() -> None:
    result = run_bench(BENCH, "--quick", timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    rows = report["rounds"]
    assert sorted(r["impl"] for r in rows) == ["java", "ours"]
    backlog_bytes = report["settings"]["entries"] * report["settings"]["size"]
    for row in rows:
        assert row["entries"] == report["settings"]["entries"] and row["entries_per_s"] > 0, row
        assert row["cached_mib_before_drop"] > 0 and row["cached_mib_after_drop"] < 0.1, row
        assert row["disk_read_mib"] * 2**20 >= backlog_bytes, row
