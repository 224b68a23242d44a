"""The stream cleaner benchmark (bench/stream_cleaner_bench.py) runs on a tiny stream: the in-process cleaner and
the Spark one both keep the latest record of each key and reclaim the rest; numbers are not checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stream_cleaner_bench.py"


def test_stream_cleaner_bench_quick_run_cleans_with_both_cleaners(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCH), "--quick", "--workdir", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    res, _ = json.JSONDecoder().raw_decode(out[out.index("{"):])
    for cleaner in ("cleaner", "spark"):
        run = res[cleaner]
        assert run["swapped"] and run["records_read"] == res["records"], run
        assert 0 < run["records_kept"] < run["records_read"] and run["bytes_reclaimed"] > 0, run
