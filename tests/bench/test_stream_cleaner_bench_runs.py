"""The stream cleaner benchmark (bench/stream_cleaner_bench.py) runs on a tiny stream: the in-process cleaner and
the Spark one both keep the latest record of each key and reclaim the rest; numbers are not checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stream_cleaner_bench.py"


@pytest.mark.timeout(1100)  # the quick run may take 900 s on a loaded machine, then stops its processes
def test_stream_cleaner_bench_quick_run_cleans_with_both_cleaners(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    res, _ = json.JSONDecoder().raw_decode(out[out.index("{"):])
    for cleaner in ("cleaner", "spark"):
        run = res[cleaner]
        assert run["swapped"] and run["records_read"] == res["records"], run
        assert 0 < run["records_kept"] < run["records_read"] and run["bytes_reclaimed"] > 0, run
