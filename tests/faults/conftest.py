"""Fault scenarios against real bookies of both implementations (tests/support/java_bookies.py), judged by the
history checker (tests/support/history.py); docs/reliability.md has the table they fill."""

import os
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from tests.support.faults import Partition, ProcessPartition, remove_partitions
from tests.support.java_bookies import cluster_factory

# Fixtures, found by pytest under these names.
__all__ = ["cluster_factory", "cut_until_the_end", "no_partition_left"]

P = TypeVar("P", Partition, ProcessPartition)


@pytest.fixture(scope="session", autouse=True)
def no_partition_left() -> Iterator[None]:
    """The safety net under each scenario's own finalizer: a partition rule left behind would cut a bookie
    address and port that a later test may use. Runs killed before their finalizers leave tables whose
    process is gone: removed here first."""
    remove_partitions()
    yield
    remove_partitions(owner=os.getpid())


@pytest.fixture
def cut_until_the_end() -> Iterator[Callable[[P], P]]:
    """``cut(partition)``: cuts it now and returns it; it stays cut until its ``heal()`` or the end of the test,
    whatever the test does."""
    made: list[Partition | ProcessPartition] = []

    def cut(partition: P) -> P:
        made.append(partition)
        partition.cut()
        return partition

    try:
        yield cut
    finally:
        for partition in made:
            partition.heal()
