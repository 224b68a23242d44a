"""Playground runs do not pile up in the cache: `bookie-fleet playground --bookies-only` (ZooKeeper and three
bookies) run twice with an empty cache leaves only the second run's logs, the first run's data and logs gone;
with --keep a run's data (journals, entry logs, ZooKeeper's) stays until the next run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bookie_fleet.cache import LOCK_NAME, disk_usage


def _playground(cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "bookie_fleet.cli", "playground", "--bookies-only", "--ledgers", "3",
         "--entries", "50", *extra],
        env={**os.environ, "BOOKIE_FLEET_CACHE": str(cache)}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _runs(cache: Path) -> list[Path]:
    return sorted((cache / "playground").iterdir())


def _files(run: Path) -> set[str]:
    return {str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and p.name != LOCK_NAME}


def test_two_runs_leave_only_the_last_runs_logs(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _playground(cache, "--keep")
    [kept] = _runs(cache)
    whole = disk_usage(cache)
    assert {f for f in _files(kept) if not f.endswith(".log")}, "a kept run has its data"

    out = _playground(cache).stdout
    [last] = _runs(cache)
    assert last != kept and f"removed the earlier run {kept}" in out
    logs = _files(last)
    assert logs and all(f.endswith(".log") for f in logs), logs
    assert {f.split("/")[0] for f in logs} >= {"zookeeper", "bookie-0", "bookie-1", "bookie-2"}
    # The cache now holds the last run's logs and nothing else (but its two directories): far less than a run.
    assert [p.name for p in cache.iterdir()] == ["playground"]
    assert disk_usage(cache) - disk_usage(last) <= 2 * 4096
    assert disk_usage(cache) < whole / 4, (disk_usage(cache), whole)
    print(f"\n[playground cache] a kept run: {whole} bytes; after the next run: {disk_usage(cache)} bytes")
    assert "its report and logs stay in" in out
