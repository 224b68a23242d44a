"""The benchmark suite's harness (bench/run_all.py) runs end to end on a tiny workload: both clusters, BookKeeper's
BenchThroughputLatency and BenchReadThroughputLatency, our client's adds, catch-up and tailing reads, and a forced
major compaction of a prepared store on one bookie of each implementation under a light add load, Apache
BookKeeper's bookies at the newest release the bootstrap assembled. Numbers are not checked (no timings in tests),
only that every workload produced a successful point for each implementation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module, run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run_all.py"


@pytest.fixture(scope="module")
def peer() -> Iterator[ModuleType]:
    yield from bench_module("peer")


@pytest.mark.timeout(1300)  # two clusters of each implementation, one after the other, on 2 shared cores
def test_run_all_quick_measures_every_workload_on_both_implementations(peer: ModuleType, tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=1100)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-3000:]
    points = json.loads(result.stdout.strip().splitlines()[-1])
    seen = {(p["workload"], p["impl"], p["params"].get("proto")) for p in points}
    for impl in ("java", "ours"):
        assert {("btl", impl, "v3"), ("btl", impl, "v2"), ("pyclient", impl, "v3"), ("catchup-java", impl, None),
                ("catchup-py", impl, None), ("tail-py", impl, None), ("compaction", impl, None)} <= seen
    # A failed point is logged and kept as NaN (count 0) rather than losing the run; none may fail here, the
    # BenchReadThroughputLatency and tailing points included.
    failed = [p for p in points if not (p["ops_per_s"] > 0 and p["count"] > 0)]
    assert not failed, json.dumps(failed) + "\n" + why_points_failed(result.stdout)
    for p in points:
        if p["workload"] == "compaction":
            # every prepared entry log reclaimed, and the light add load ran with and without compaction
            assert p["extra"]["freed_mb"] == p["extra"]["prepared_mb"] > 0, p
            assert p["extra"]["quiet_adds"] > 0 and p["extra"]["adds"] > 0, p
    assert "| v3 | 1/1/1 | 1024 B |" in result.stdout
    assert "catch-up, BenchReadThroughputLatency" in result.stdout
    assert "| live data rewritten per second of the forced cycle, MB/s |" in result.stdout
    # The peer runs as its users run it (BookKeeper's own JVM settings), read back from the running process.
    jvm = next(line for line in result.stdout.splitlines()
               if line.startswith("JVM options of a running Apache BookKeeper bookie"))
    assert "-XX:+UseG1GC" in jvm and "-Xmx1g" in jvm and "-XX:MaxDirectMemorySize=2g" in jvm, jvm
    assert "TieredStopAtLevel" not in jvm and "UseSerialGC" not in jvm, jvm
    assert "| java | " in result.stdout and "last pass vs the one before" in result.stdout
    # The release the report names is the one the running Java bookies served, read from their classpath.
    assert f"## Suite: our bookie vs Apache BookKeeper {peer.choose(None).version}, " in result.stdout


def why_points_failed(stdout: str) -> str:
    """The harness's account of each failed point (its error and the end of the tool's output), which the
    report at the end of its output does not repeat."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("point failed on ")]
    return "\n".join("\n".join(lines[i:i + 60]) for i in starts)[-8000:] or stdout[-3000:]
