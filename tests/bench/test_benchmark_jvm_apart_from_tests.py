"""The test suite's Apache BookKeeper bookies keep their fast-start JVM (C1 only, serial GC, small heap): the
benchmark's production settings (checked by the suite's quick run) are the benchmark's alone."""

from __future__ import annotations

from pathlib import Path

from bookie_fleet.java_bookies import PRODUCTION_JVM_OPTS, TEST_JVM_OPTS

from tests.support.java_bookies import BookieCluster, java_cluster

__all__ = ["java_cluster"]


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_suite_java_bookies_run_with_the_fast_start_jvm(java_cluster: BookieCluster) -> None:
    for bookie in java_cluster.bookies:
        assert bookie.proc is not None and bookie.proc.poll() is None
        args = _cmdline(bookie.proc.pid)
        assert "-XX:TieredStopAtLevel=1" in args and "-XX:+UseSerialGC" in args, args
        assert "-Xmx1g" not in args and "-XX:+UseG1GC" not in args, args


def test_the_two_jvm_settings_differ_where_it_matters() -> None:
    assert "-XX:TieredStopAtLevel=1" in TEST_JVM_OPTS and "-XX:TieredStopAtLevel=1" not in PRODUCTION_JVM_OPTS
    assert {"-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g", "-XX:+UseG1GC"} <= set(PRODUCTION_JVM_OPTS)
