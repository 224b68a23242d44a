"""bench/run_all.py refuses arguments it cannot honour before it starts anything, naming the option and the
value, instead of a traceback half-way through a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run_all.py"


@pytest.mark.parametrize(("args", "message"), [
    (["--ensembles", "3/2"], "'3/2' is not ensemble/write quorum/ack quorum"),
    (["--ensembles", "3/2/3"], "'3/2/3': need 1 <= ack <= write <= ensemble <= 3"),
    (["--ensembles", "5/3/2"], "'5/3/2': need 1 <= ack <= write <= ensemble <= 3"),
    (["--sizes", "1k"], "'1k' is not a comma-separated list of entry sizes"),
    (["--sizes", "0"], "entry sizes must be positive"),
    (["--workloads", "adds,compactoin"], "--workloads: unknown compactoin"),
    (["--impls", "java,rust"], "--impls: unknown rust"),
    (["--protocols", "v4"], "--protocols: unknown v4"),
    (["--ours-config", "writeCache=64"], "writeCache: unknown configuration key"),
    (["--ours-config", "dbStorage_writeCacheMaxSizeMb=big"], "dbStorage_writeCacheMaxSizeMb: Input should be a valid"),
    (["--ours-config", "dbStorage_writeCacheMaxSizeMb"], "expected KEY=VALUE"),
    (["--peer", "4.19.0"], "--peer: 4.19.0 is not a release the bootstrap assembled (assembled: "),
])
def test_bad_arguments_are_refused_naming_the_problem(args: list[str], message: str, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    result = run_bench(BENCH, *args, "--workdir", str(workdir), "--no-docs", timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not workdir.exists()  # refused before anything was prepared or started
