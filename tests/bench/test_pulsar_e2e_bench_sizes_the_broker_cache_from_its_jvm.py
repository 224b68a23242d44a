"""The Pulsar end-to-end benchmark sizes the broker's managed-ledger cache as Pulsar's default does, a fifth of the
direct memory of the JVM that broker runs in: the production JVM's 2 GiB for measured runs, the tests' small JVM for
the quick run (a cache sized for 2 GiB outgrows 256 MiB of direct memory, and the broker stops itself on the
failed allocation). Options without a direct-memory size, or with one it cannot read, are refused naming it."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
from bookie_fleet.pulsar import JVM_OPTS

from tests.support.bench_runs import bench_module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("pulsar_e2e_bench")


def test_the_production_broker_gets_a_fifth_of_its_two_gibibytes(bench: ModuleType) -> None:
    assert bench.broker_settings((3, 2, 2))["managedLedgerCacheSizeMB"] == 409


def test_the_quick_runs_broker_gets_a_fifth_of_the_tests_jvm(bench: ModuleType) -> None:
    cache = bench.broker_settings((1, 1, 1), JVM_OPTS)["managedLedgerCacheSizeMB"]
    assert cache == bench.direct_memory_mb(JVM_OPTS) // 5 and cache < bench.direct_memory_mb(JVM_OPTS)


@pytest.mark.parametrize(("jvm", "size"), [(("-XX:MaxDirectMemorySize=512k",), 0),
                                           (("-XX:MaxDirectMemorySize=1g", "-XX:MaxDirectMemorySize=256m"), 256)])
def test_the_last_direct_memory_size_given_counts(bench: ModuleType, jvm: tuple[str, ...], size: int) -> None:
    assert bench.direct_memory_mb(jvm) == size


@pytest.mark.parametrize(("jvm", "named"), [(("-Xmx1g",), "no -XX:MaxDirectMemorySize"),
                                            (("-XX:MaxDirectMemorySize=lots",), "MaxDirectMemorySize=lots")])
def test_unreadable_options_are_refused_naming_them(bench: ModuleType, jvm: tuple[str, ...], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        bench.direct_memory_mb(jvm)
