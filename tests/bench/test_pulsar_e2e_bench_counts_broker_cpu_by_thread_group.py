"""The Pulsar end-to-end benchmark splits the broker's CPU and wakeups and write calls over a point by thread group: a
thread's pool is its Java name without the numbers, the Java names come from a thread dump's ``nid``s (the
kernel keeps 15 characters), and each figure is the change between two samples per message published, a thread
started in between counted from zero."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module

# Header lines as jcmd <pid> Thread.print writes them on Java 17.
THREAD_DUMP = '''"main" #1 prio=5 os_prio=0 cpu=1234.56ms elapsed=300.12s tid=0x7f nid=0x3039 waiting on condition
"BookKeeperClientWorker-OrderedExecutor-1-0" #41 prio=5 os_prio=0 cpu=800.00ms elapsed=290.00s tid=0x1 nid=0x303a
"bookkeeper-io-3-2" #57 daemon prio=5 os_prio=0 cpu=10.00ms elapsed=280.00s tid=0x2 nid=0x303b runnable
"GC Thread#1" os_prio=0 cpu=55.10ms elapsed=300.00s tid=0x3 nid=0x303c runnable
'''


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("pulsar_e2e_bench")


def test_a_thread_dump_names_each_thread_by_its_id(bench: ModuleType) -> None:
    assert bench.parse_thread_print(THREAD_DUMP) == {
        0x3039: "main", 0x303A: "BookKeeperClientWorker-OrderedExecutor-1-0", 0x303B: "bookkeeper-io-3-2",
        0x303C: "GC Thread#1"}


@pytest.mark.parametrize(("name", "group"), [
    ("BookKeeperClientWorker-OrderedExecutor-1-0", "BookKeeperClientWorker-OrderedExecutor"),
    ("bookkeeper-io-3-2", "bookkeeper-io"), ("pulsar-io-4-12", "pulsar-io"), ("GC Thread#1", "GC Thread"),
    ("ForkJoinPool-1-worker-3", "ForkJoinPool-worker"),
    ("pulsar-web-acceptor@5e8a3c2d-ServerConnector@1b2c{HTTP/1.1, (http/1.1)}{127.0.0.1:8080}",
     "pulsar-web-acceptor"), ("main", "main"), ("C2 CompilerThread0", "C CompilerThread"),
])
def test_a_thread_group_is_the_name_without_its_numbers(bench: ModuleType, name: str, group: str) -> None:
    assert bench.thread_group(name) == group


def test_usage_is_the_change_per_message_summed_over_a_groups_threads(bench: ModuleType) -> None:
    s = bench.ThreadSample
    before = {1: s("bookkeeper-io-1", 1.0, 100, 10), 2: s("bookkeeper-io-1", 2.0, 50, 5), 3: s("main", 5.0, 0, 0)}
    after = {1: s("bookkeeper-io-1", 1.5, 300, 30), 2: s("bookkeeper-io-1", 2.5, 150, 25), 3: s("main", 5.0, 0, 0),
             4: s("pulsar-io-4-1", 0.25, 40, 8)}  # thread 4 started during the point
    names = {1: "bookkeeper-io-3-1", 2: "bookkeeper-io-3-2"}  # 3 and 4 keep their kernel names
    usage = bench.thread_usage(before, after, names, 1000)
    assert usage["bookkeeper-io"] == pytest.approx(
        {"cpu_us_per_msg": 1000.0, "wakeups_per_msg": 0.3, "writes_per_msg": 0.04, "threads": 2})
    assert usage["pulsar-io"] == pytest.approx(
        {"cpu_us_per_msg": 250.0, "wakeups_per_msg": 0.04, "writes_per_msg": 0.008, "threads": 1})
    assert usage["main"]["cpu_us_per_msg"] == 0.0


def test_a_processs_threads_are_read_from_proc(bench: ModuleType) -> None:
    samples = bench.thread_samples(os.getpid())
    assert os.getpid() in samples  # the main thread's id is the process id
    main = samples[os.getpid()]
    assert main.cpu_s > 0 and main.writes >= 0 and main.wakeups >= 0
    assert bench.thread_samples(2**22 + 1) == {}  # no such process: nothing, not an error


def test_the_table_lists_the_busiest_groups_first_with_a_total(bench: ModuleType) -> None:
    w = bench.Workload(True, 1024, 8)

    def point(impl: str, threads: dict[str, dict[str, float]]) -> object:
        nan = float("nan")
        return bench.E2ePoint(impl, 0, True, 1024, 8, 1, nan, nan, nan, nan, 1, nan, nan, nan, nan, nan, nan, 1.0,
                              nan, threads)

    g = {"cpu_us_per_msg": 0.0, "wakeups_per_msg": 0.0, "writes_per_msg": 0.0, "threads": 1}
    rows = bench.thread_table([point("ours", {"a": {**g, "cpu_us_per_msg": 2.0}, "b": {**g, "cpu_us_per_msg": 9.0}}),
                               point("java", {"a": {**g, "cpu_us_per_msg": 4.0, "wakeups_per_msg": 0.5}})], w)
    assert rows[2].startswith("| broker thread group | ours CPU us/msg | Java CPU us/msg | ours wakeups/msg")
    assert [r.split(" | ")[0:3] for r in rows[4:]] == [["| b", "9.0", "0.0"], ["| a", "2.0", "4.0"],
                                                       ["| all threads", "11.0", "4.0"]]


def test_the_message_path_counts_only_the_threads_that_carry_messages(bench: ModuleType) -> None:
    g = {"wakeups_per_msg": 0.0, "writes_per_msg": 0.0, "threads": 1}
    nan = float("nan")
    threads = {"pulsar-io": {**g, "cpu_us_per_msg": 3.0}, "BookKeeperClientWorker-OrderedExecutor":
               {**g, "cpu_us_per_msg": 0.5}, "broker-topic-workers-OrderedExecutor": {**g, "cpu_us_per_msg": 0.25},
               "pulsar-web": {**g, "cpu_us_per_msg": 7.0}, "C CompilerThread": {**g, "cpu_us_per_msg": 11.0}}
    p = bench.E2ePoint("ours", 0, True, 1024, 8, 1, nan, nan, nan, nan, 1, nan, nan, nan, nan, nan, 21.75, 1.0, nan,
                       threads)
    assert p.path_cpu_us_per_msg == 3.75
    p.broker_threads = {}  # a point measured without thread figures
    assert p.path_cpu_us_per_msg != p.path_cpu_us_per_msg  # NaN: no figure, not a zero
