"""A run of one of BookKeeper's Java benchmark tools (bench/run_all.py's ``java_tool``) writes nothing into the
machine's temporary directory that outlives the harness: its logging configuration is a file of the repository,
and its JVM's temporary files go to the harness's own directory, removed when the harness exits."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("run_all")


def test_a_java_tool_run_leaves_only_the_harness_own_directory(bench: ModuleType, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    machine_tmp = tmp_path / "tmp"
    machine_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(machine_tmp))
    try:  # BenchThroughputLatency prints its options for -help and exits with -1
        output = bench.java_tool(bench.BTL, "-help", limit_s=60)
    except RuntimeError as exc:
        output = str(exc)
    assert "zookeeper" in output.lower(), output  # the tool ran and printed its options
    left = sorted(p.name for p in machine_tmp.iterdir() if not p.name.startswith("bookie-fleet-java-tools-"))
    assert left == [], left
