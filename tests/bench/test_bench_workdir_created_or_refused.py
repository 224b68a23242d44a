"""A benchmark's ``--workdir`` (bench/workdir.py, shared by every benchmark that takes one) is created when
missing, and a path that cannot be a directory (under a regular file) ends the run at once with a message naming
the option and the path, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench"
# Those whose refusal comes before any process starts, cheap to run: one probe, one harness of real bookies.
REFUSERS = ["checkpoint_cpu.py", "preauth_flood.py", "gc_bench.py", "socket_fuzz.py"]


def test_a_missing_workdir_is_created(tmp_path: Path) -> None:
    workdir = tmp_path / "not" / "there" / "yet"
    result = run_bench(BENCH / "checkpoint_cpu.py", "--quick", "--sizes", "100", "--workdir", str(workdir),
                       timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert workdir.is_dir()


@pytest.mark.parametrize("script", REFUSERS)
def test_a_workdir_under_a_file_is_refused_by_name(script: str, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    workdir = a_file / "work"
    result = run_bench(BENCH / script, "--quick", "--workdir", str(workdir), timeout=60)
    assert result.returncode != 0
    last = (result.stderr.strip().splitlines() or [""])[-1]
    assert last == f"--workdir {workdir}: cannot be used as a directory: Not a directory", result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert a_file.read_text() == "not a directory\n"


def test_the_benchmarks_with_a_workdir_all_take_it_from_one_place() -> None:
    by_hand = [p.name for p in sorted(BENCH.glob("*.py"))
               if '"--workdir"' in p.read_text() and p.name != "workdir.py"]
    assert not by_hand, f"--workdir declared outside bench/workdir.py in {by_hand}"
