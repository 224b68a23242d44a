"""Apache BookKeeper's Java client, run by a test, that is not done in the time the test gives it fails the test
with what it printed and the stacks of its threads (the JVM's own dump, on SIGQUIT), so that a hang seen once in
CI says where the client waited; and it leaves no process behind."""

from __future__ import annotations

import socket

import pytest

from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness


async def test_a_java_client_that_overruns_fails_with_its_threads() -> None:
    # A "ZooKeeper" that takes connections and never answers: the client's start waits for its session.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        cluster = BookieCluster(f"127.0.0.1:{port}", "/ledgers", kind="python")
        with pytest.raises(AssertionError) as failed:
            await run_harness(cluster, "write", "v3", "1", "1", "1", "CRC32C", "pw", "1", limit_s=4)
    report = str(failed.value)
    assert "ClientHarness write v3 1 1 1 CRC32C pw 1 not done within 4 s" in report, report[:2000]
    assert "Full thread dump" in report, report[:4000]
    assert "ClientHarness.main" in report, report[:4000]
