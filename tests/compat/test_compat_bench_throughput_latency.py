"""Apache BookKeeper's own benchmark (``BenchThroughputLatency`` from bookkeeper-benchmark) runs against our
bookies without a single error, over v3 and v2."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal

import pytest

from tests.compat.java_client import java_command
from tests.support.java_bookies import BookieCluster

BENCH = "org.apache.bookkeeper.benchmark.BenchThroughputLatency"


@pytest.mark.parametrize("protocol", ["v3", "v2"])
async def test_bench_throughput_latency_runs_clean_on_our_bookies(python_cluster: BookieCluster,
                                                                  protocol: str, tmp_path: object) -> None:
    cluster = python_cluster
    # The benchmark only takes a ZooKeeper connect string and uses <chroot>/ledgers: chroot to our root.
    assert cluster.ledgers_root.endswith("/ledgers")
    chroot = cluster.ledgers_root[: -len("/ledgers")]
    args = ["-zookeeper", cluster.zk_connect + chroot, "-ensemble", "3", "-quorum", "3", "-ackQuorum", "2",
            "-entrysize", "512", "-throttle", "2000", "-time", "6", "-sendlimit", "20000", "-skipwarmup",
            "-latencyFile", f"{tmp_path}/latency.dat", "-timeout", "60"]
    if protocol == "v2":
        args.append("-useV2")
    proc = await asyncio.create_subprocess_exec(
        *java_command(BENCH, *args), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    # "Interrupted while waiting" is how the benchmark's sender thread is told the -time is up; not an error.
    problems = [line for line in text.splitlines()
                if re.search(r"\b(ERROR|Exception|failed|Error in)\b", line)
                and "Interrupted while waiting" not in line and "InterruptedException" not in line]
    assert problems == [], "\n".join(problems[:20])
    # -throttle is a rate (entries/s). An add that fails is logged as an error (checked above); the few
    # still in flight when -time ends are not counted by the benchmark.
    sent = re.search(r"Sent: (\d+)", text)
    done = re.search(r"(\d+) completions in (\d+) milliseconds: (\d+) ops/sec", text)
    assert sent and done, text[-3000:]
    assert int(sent.group(1)) - 100 <= int(done.group(1)) <= int(sent.group(1))
    assert int(done.group(1)) > 1000
    print(f"BenchThroughputLatency {protocol} on our bookies: {done.group(3)} entries/s, "
          f"{done.group(1)} entries")
