"""The Pulsar end-to-end benchmark's table, rebuilt (``--report-only``) from results recorded before it measured the
broker by thread and its messages per entry, leaves those columns out instead of printing NaN in them; results
that carry them get them."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("pulsar_e2e_bench")


def _points(bench: ModuleType, threads: dict[str, dict[str, float]], per_entry: float) -> list[object]:
    return [bench.E2ePoint(impl, 0, True, 1024, 8, 100, 1000.0, 1.0, 2.0, 3.0, 100, 900.0, 4.0, 5.0, 6.0, 7.0, 8.0,
                           1.5, per_entry, threads) for impl in ("ours", "java")]


def test_older_results_get_the_table_without_the_newer_columns(bench: ModuleType) -> None:
    rows = bench.table(_points(bench, {}, float("nan")), (bench.Workload(True, 1024, 8),))
    assert "message-path" not in rows[0] and "msg/entry" not in rows[0]
    assert all("nan" not in row for row in rows), rows
    assert [row.count("|") for row in rows] == [rows[0].count("|")] * 3, "every row has the header's columns"


def test_results_by_thread_get_the_newer_columns(bench: ModuleType) -> None:
    threads = {"pulsar-io": {"cpu_us_per_msg": 2.5, "wakeups_per_msg": 0.0, "writes_per_msg": 0.0, "threads": 1}}
    rows = bench.table(_points(bench, threads, 300.0), (bench.Workload(True, 1024, 8),))
    assert "| ours broker message-path CPU us/msg |" in rows[0] and "| Java msg/entry |" in rows[0]
    assert "| 2.5 | 2.5 | 300.0 | 300.0 |" in rows[2]
    assert [row.count("|") for row in rows] == [rows[0].count("|")] * 3
