"""The benchmark suite reads BenchThroughputLatency's figures from the line it ends with; a run that printed no
result or completed no add is an error carrying the end of the tool's own output (why: a ledger it could not
create, adds answered with an error), never a point of zero throughput."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module

DONE = """INFO  BenchThroughputLatency - Calculating percentiles
INFO  BenchThroughputLatency - 48211 completions in 10004 milliseconds: 4819 ops/sec
INFO  BenchThroughputLatency - 99th percentile latency: 12.5
"""
NOTHING_COMPLETED = """BKException$BKNotEnoughBookiesException: Not enough non-faulty bookies available
ERROR BenchThroughputLatency - Handle 17 is null!
INFO  BenchThroughputLatency - 0 completions in 10001 milliseconds: 0 ops/sec
"""


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("run_all")


def test_the_rate_and_completions_come_from_the_closing_line(bench: ModuleType) -> None:
    assert bench.btl_result(DONE, 10) == (4819, 48211)


def test_no_completed_add_is_an_error_carrying_the_tools_own_account(bench: ModuleType) -> None:
    with pytest.raises(RuntimeError, match="completed no add in 10s") as raised:
        bench.btl_result(NOTHING_COMPLETED, 10)
    assert "Handle 17 is null!" in str(raised.value)


def test_output_without_the_closing_line_is_an_error(bench: ModuleType) -> None:
    with pytest.raises(RuntimeError, match="printed no result") as raised:
        bench.btl_result("Timing out benchmark after 100000ms\n", 10)
    assert "Timing out benchmark" in str(raised.value)
