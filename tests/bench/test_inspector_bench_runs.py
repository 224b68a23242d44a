"""The inspector benchmark (bench/inspector_bench.py) runs on a tiny load: both modes measure the Java bookies'
adds, and in the inspectors' mode the inspectors answered explain requests and the readers fetched entry-log bytes
through them; numbers are not checked (no timings in tests), only that each point did its work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "inspector_bench.py"


@pytest.mark.timeout(1100)  # the quick run may take 900 s on a loaded machine, then stops its processes
def test_inspector_bench_quick_run_measures_both_modes() -> None:
    result = run_bench(BENCH, "--quick", timeout=900)
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    points = json.loads(out.strip().splitlines()[-1])
    assert [p["mode"] for p in points] == ["no inspector",
                                           "inspectors: explain every 2 s and an audit reading through them"]
    assert all(p["adds"] > 0 for p in points)
    base, inspected = points
    assert base["explains"] == 0 and base["read_through_mb_s"] == 0
    assert inspected["explains"] > 0 and inspected["read_through_mb_s"] > 0
