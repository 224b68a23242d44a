"""bench/pulsar_e2e_bench.py refuses a run it cannot make before it starts anything, naming the options and the
values, instead of a table of failed points."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pulsar_e2e_bench.py"


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--seconds", "1"], ["--warmups", "-1"]])
def test_bad_arguments_are_refused_naming_the_problem(args: list[str], tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    result = run_bench(BENCH, *args, "--workdir", str(workdir), timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--rounds must be >= 1, --seconds >= 2 and --warmups >= 0" in result.stderr
    assert args[1] in result.stderr
    assert "Traceback" not in result.stderr
    assert not workdir.exists()  # refused before anything was prepared or started


@pytest.mark.parametrize("points", ["on-2k-8", "on-1k-8,batch-1k-8", ","])
def test_an_unknown_point_is_refused_naming_the_valid_ones(points: str, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    result = run_bench(BENCH, "--points", points, "--workdir", str(workdir), timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--points: unknown point(s)" in result.stderr
    assert ("valid points: on-1k-1, on-1k-8, on-16k-1, on-16k-8, off-1k-1, off-1k-8, off-16k-1, off-16k-8"
            in result.stderr)
    assert "Traceback" not in result.stderr
    assert not workdir.exists()
