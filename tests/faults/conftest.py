"""Fault scenarios against real bookies of both implementations (tests/support/java_bookies.py), judged by the
history checker (tests/support/history.py); docs/reliability.md has the table they fill."""

import os
from collections.abc import Iterator

import pytest

from tests.support.faults import remove_partitions
from tests.support.java_bookies import cluster_factory

# Fixtures, found by pytest under these names.
__all__ = ["cluster_factory", "no_partition_left"]


@pytest.fixture(scope="session", autouse=True)
def no_partition_left() -> Iterator[None]:
    """The safety net under each scenario's own finalizer: a partition rule left behind would cut a bookie
    address and port that a later test may use. Runs killed before their finalizers leave tables whose
    process is gone: removed here first."""
    remove_partitions()
    yield
    remove_partitions(owner=os.getpid())
