"""bench/jfr_top_frames.py reads ``jfr print``'s CPU samples and counts them by thread group, by top frame and by the
innermost Pulsar / BookKeeper frame (the top frame when a stack has none); a missing recording is refused naming
it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module, run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Two samples as ``jfr print --events jdk.ExecutionSample`` (JDK 17) writes them, and one of the JIT.
PRINTED = """jdk.ExecutionSample {
  startTime = 04:56:57.615
  sampledThread = "pulsar-io-3-4" (javaThreadId = 77)
  state = "STATE_RUNNABLE"
  stackTrace = [
    org.apache.pulsar.common.api.proto.BaseCommand.writeTo(ByteBuf) line: 2448
    org.apache.pulsar.common.protocol.Commands.serializeWithSize(BaseCommand) line: 1674
    io.netty.util.concurrent.FastThreadLocalRunnable.run() line: 30
  ]
}

jdk.ExecutionSample {
  startTime = 04:56:58.001
  sampledThread = "pulsar-io-3-1" (javaThreadId = 74)
  state = "STATE_RUNNABLE"
  stackTrace = [
    java.util.concurrent.ConcurrentHashMap.get(Object) line: 936
    org.apache.bookkeeper.proto.PerChannelBookieClient.addEntry(long, byte[], long) line: 800
    io.netty.util.concurrent.FastThreadLocalRunnable.run() line: 30
  ]
}

jdk.ExecutionSample {
  startTime = 04:56:58.020
  sampledThread = "pulsar-web-41" (javaThreadId = 90)
  state = "STATE_RUNNABLE"
  stackTrace = [
    java.util.concurrent.ConcurrentHashMap.get(Object) line: 936
    java.lang.Thread.run() line: 840
  ]
}
"""


@pytest.fixture(scope="module")
def jfr() -> Iterator[ModuleType]:
    yield from bench_module("jfr_top_frames")


def test_samples_are_read_with_their_thread_and_frames_innermost_first(jfr: ModuleType) -> None:
    assert [(t, f[0], len(f)) for t, f in jfr.samples(PRINTED)] == [
        ("pulsar-io-3-4", "org.apache.pulsar.common.api.proto.BaseCommand.writeTo", 3),
        ("pulsar-io-3-1", "java.util.concurrent.ConcurrentHashMap.get", 3),
        ("pulsar-web-41", "java.util.concurrent.ConcurrentHashMap.get", 2)]


def test_the_summary_counts_by_thread_group_top_frame_and_pulsar_or_bookkeeper_frame(jfr: ModuleType) -> None:
    text = jfr.summary(PRINTED, 5)
    threads, tops, owners = text.split("\n\n")[1:]
    assert threads.splitlines()[1:] == ["  66.7%       2  pulsar-io", "  33.3%       1  pulsar-web"]
    assert tops.splitlines()[1] == "  66.7%       2  java.util.concurrent.ConcurrentHashMap.get"
    assert sorted(owners.splitlines()[1:]) == sorted([
        "  33.3%       1  org.apache.pulsar.common.api.proto.BaseCommand.writeTo",
        "  33.3%       1  org.apache.bookkeeper.proto.PerChannelBookieClient.addEntry",
        "  33.3%       1  java.util.concurrent.ConcurrentHashMap.get"])


def test_a_missing_recording_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "none.jfr"
    result = run_bench(BENCH / "jfr_top_frames.py", str(missing), timeout=60)
    assert result.returncode == 2
    assert f"no recording at {missing}" in result.stderr
    assert "Traceback" not in result.stderr
