"""A ledger written by one client is fenced and recovered by the other after its writer is killed
(SIGKILL, no close): Java writer -> Python recovery, Python writer -> Java recovery, on our bookies.
No acknowledged entry is lost and both clients then read the same closed ledger."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from bookie.client import BookKeeper

from tests.support.java_bookies import BookieCluster
from tests.support.java_client import HeldWriter, run_harness

WRITER = Path(__file__).with_name("python_writer.py")


async def test_python_client_recovers_a_killed_java_writer(python_cluster: BookieCluster) -> None:
    writer = await HeldWriter.start(python_cluster, "v3", "3", "3", "2", "CRC32C", "pw", "100")
    await writer.kill()
    assert writer.acked == list(range(100))
    async with BookKeeper(python_cluster.client_config()) as bk:
        lh = await bk.open_ledger(writer.ledger_id, b"pw")
        assert lh.closed and lh.last_add_confirmed == 99
        assert [e.payload for e in await lh.read(0, 99)] == [b"java-%d" % i for i in range(100)]
    read = await run_harness(python_cluster, "read", "v3", str(writer.ledger_id), "pw", "norecover")
    assert read.result[0] == "99" and read.result[2] == "true"


async def test_java_client_recovers_a_killed_python_writer(python_cluster: BookieCluster) -> None:
    cluster = python_cluster
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(WRITER), cluster.zk_connect, cluster.ledgers_root, "100",
        stdout=asyncio.subprocess.PIPE, start_new_session=True)
    ledger_id, acked = -1, []
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(60):
            while line := (await proc.stdout.readline()).decode().strip():
                if line.startswith("LEDGER "):
                    ledger_id = int(line.split()[1])
                elif line.startswith("ACKED "):
                    acked.append(int(line.split()[1]))
                elif line == "HOLDING":
                    break
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    assert acked == list(range(100))
    read = await run_harness(cluster, "read", "v3", str(ledger_id), "pw", "recover")
    assert read.result[0] == "99" and read.result[2] == "true"
    assert read.entries() == {i: f"python-{i}" for i in range(100)}
