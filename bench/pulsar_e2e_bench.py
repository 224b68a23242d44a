"""Pulsar end to end: Pulsar's own load tools (``pulsar-perf produce`` / ``consume``, PerformanceProducer and
PerformanceConsumer of pulsar-testclient) through a Pulsar broker on three of our bookies, next to the same broker
on three of Apache BookKeeper's (the release of ``--peer``, bench/peer.py), same machine, same run.

    python bench/pulsar_e2e_bench.py                 # 2 rounds; rewrites the Pulsar section of docs/benchmarks.md
    python bench/pulsar_e2e_bench.py --quick         # one short point on both implementations (the brokers at the
                                                     # tests' fast-start JVM), docs untouched
    python bench/pulsar_e2e_bench.py --report-only   # the docs section again from bench/pulsar_e2e_results.json
    python bench/pulsar_e2e_bench.py --points on-1k-8,on-16k-8 --rounds 3
                                                     # chosen points only, with their own docs section and
                                                     # bench/pulsar_e2e_points_results.json

Each implementation gets its own broker (a broker writes to one BookKeeper cluster), both at the same settings:
Pulsar's defaults except where ``BROKER_SETTINGS`` says why, persistence 3/2/2, the JVM of Pulsar's
``pulsar_env.sh`` with half its memory (``BROKER_JVM``). The bookies are the suite's (bench/run_all.py): fsync on,
Apache BookKeeper with DbLedgerStorage and its bin/bookkeeper JVM. Per point, a consumer subscribes first, then
the producer publishes as fast as the broker acknowledges for ``--seconds`` (at most ``MAX_OUTSTANDING`` messages
in flight per producer); the consumer drains what is left and is stopped. Points: batching on (the client's
defaults) and off, 1 KiB and 16 KiB messages, 1 and 8 topics. Rounds alternate which implementation goes first;
values are medians over rounds. Bookie CPU: utime + stime of the cluster's bookie processes from /proc over the
point, per message published. Broker CPU likewise, and per thread: each broker thread's CPU, wakeups and write system
calls over the point (/proc/<pid>/task/*), grouped by thread name with its numbers stripped
("BookKeeperClientWorker-OrderedExecutor", "pulsar-io", "bookkeeper-io"...), the full Java names from
``jcmd Thread.print``. Results also go to bench/pulsar_e2e_results.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from bookie_fleet.processes import java_tmpdir, stop_on_sigterm
from localkube.procs import signal_group

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"
RESULTS = REPO / "bench" / "pulsar_e2e_results.json"
BEGIN, END = "<!-- pulsar-e2e:begin -->", "<!-- pulsar-e2e:end -->"
# A run of chosen points (--points) keeps its own results and docs section: a partial run never replaces the
# table of every point.
POINTS_RESULTS = REPO / "bench" / "pulsar_e2e_points_results.json"
POINTS_BEGIN, POINTS_END = "<!-- pulsar-e2e-points:begin -->", "<!-- pulsar-e2e-points:end -->"
PERSISTENCE = (3, 2, 2)
MAX_OUTSTANDING = 1000  # per producer, as BenchThroughputLatency's -throttle in the suite
POLL_S = 0.5  # the broker's delivery counters, sampled for the consume rate
DRAIN_S = 60  # at most this long for the consumer to receive what was published, after the producer ends
UNTHROTTLED_RATE = 10_000_000  # msg/s: far above what either cluster reaches here, so the broker's acks pace it

# Pulsar's conf/pulsar_env.sh for a broker (ZGC, pre-touched heap, Netty's leak detection off, its recycler cap),
# with half its heap and direct memory (2g/4g there): two brokers, six bookies and the load tools share this
# machine's memory with other work. The --add-opens are what the broker needs on Java 17.
BROKER_JVM = ("-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g", "-XX:+UseZGC", "-XX:+PerfDisableSharedMem",
              "-XX:+AlwaysPreTouch", "-Dio.netty.leakDetectionLevel=disabled",
              "-Dio.netty.recycler.maxCapacityPerThread=4096", "-Djava.net.preferIPv4Stack=true",
              "-Dio.netty.tryReflectionSetAccessible=true",
              "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
              "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.net=ALL-UNNAMED",
              "--add-opens", "java.management/sun.management=ALL-UNNAMED",
              "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED")
# The load tools' JVM: as the benchmark client of the suite (BookKeeper's CLI settings), with direct memory for
# the Pulsar client's buffers.
TOOL_JVM = ("-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=10",
            "-Djava.net.preferIPv4Stack=true", "-Dio.netty.leakDetectionLevel=disabled",
            "-Dio.netty.tryReflectionSetAccessible=true", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED")


def direct_memory_mb(jvm: tuple[str, ...]) -> int:
    """The JVM's ``-XX:MaxDirectMemorySize`` in MiB (the last one given wins, as in the JVM)."""
    sizes = [arg.split("=", 1)[1] for arg in jvm if arg.startswith("-XX:MaxDirectMemorySize=")]
    if not sizes:
        raise ValueError(f"the broker's JVM options set no -XX:MaxDirectMemorySize: {' '.join(jvm)}")
    number, unit = sizes[-1][:-1], sizes[-1][-1].lower()
    if not number.isdigit() or unit not in "gmk":
        raise ValueError(f"-XX:MaxDirectMemorySize={sizes[-1]}: expected a number of k, m or g")
    return int(number) * {"g": 1024, "m": 1, "k": 1}[unit] // (1024 if unit == "k" else 1)


def broker_settings(ensemble: tuple[int, int, int], jvm: tuple[str, ...] = BROKER_JVM) -> dict[str, Any]:
    """broker.conf over bookie_fleet.pulsar.broker_conf(), whose small ledgers and thread pools suit the tests:
    Pulsar's own defaults again, except persistence and what the comments say. ``jvm``: the broker's JVM options,
    whose direct memory the managed-ledger cache is sized from."""
    cores = os.cpu_count() or 1
    e, w, a = ensemble
    return {
        "managedLedgerDefaultEnsembleSize": e, "managedLedgerDefaultWriteQuorum": w,
        "managedLedgerDefaultAckQuorum": a,
        # Pulsar's defaults (broker_conf() shrinks them for the tests).
        "managedLedgerMaxEntriesPerLedger": 50000, "managedLedgerMinLedgerRolloverTimeMinutes": 10,
        "retentionCheckIntervalInSeconds": 120, "brokerDeleteInactiveTopicsEnabled": True,
        "numIOThreads": 2 * cores, "numHttpServerThreads": 8, "numExecutorThreadPoolSize": cores,
        "bookkeeperNumberOfChannelsPerBookie": 16,
        # Pulsar's default is a fifth of the direct memory, written out because broker_conf() sets 16 MB. Of this
        # broker's JVM: a cache sized for another (the production JVM's 2 GiB) outgrows a small one's direct
        # memory, and the broker stops itself on the allocation failure.
        "managedLedgerCacheSizeMB": direct_memory_mb(jvm) // 5,
        # Four bundles (Pulsar's default) so the 8-topic points spread over the broker's ordered executors.
        "defaultNumberOfNamespaceBundles": 4,
    }


@dataclass(frozen=True)
class Workload:
    batching: bool
    size: int
    topics: int

    @property
    def label(self) -> str:
        return f"{'batch' if self.batching else 'nobatch'}-{self.size}-{self.topics}t"

    @property
    def point(self) -> str:
        """The name --points takes: batching, size in KiB, topics (``on-1k-8``)."""
        return f"{'on' if self.batching else 'off'}-{self.size // 1024}k-{self.topics}"


WORKLOADS = tuple(Workload(b, s, t) for b in (True, False) for s in (1024, 16384) for t in (1, 8))
QUICK_WORKLOAD = Workload(True, 1024, 1)


def chosen_workloads(spec: str) -> tuple[Workload, ...]:
    """The workloads a ``--points`` list names, in the table's order; an unknown name is a ValueError naming the
    valid ones."""
    by_name = {w.point: w for w in WORKLOADS}
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        raise ValueError(f"unknown point(s) {', '.join(unknown) or repr(spec)}; valid points: {', '.join(by_name)}")
    return tuple(w for w in WORKLOADS if w.point in names)


# The broker's thread groups that carry messages: its Netty event loops (the Pulsar protocol and, sharing them, its
# BookKeeper client's connections), the BookKeeper client's callbacks and the topics' ordered work.
MESSAGE_PATH = ("pulsar-io", "BookKeeperClientWorker-OrderedExecutor", "broker-topic-workers-OrderedExecutor")


@dataclass
class E2ePoint:
    impl: str
    round: int
    batching: bool
    size: int
    topics: int
    sent: int
    publish_rate: float
    publish_p50_ms: float
    publish_p99_ms: float
    publish_p999_ms: float
    received: int
    consume_rate: float
    e2e_p50_ms: float
    e2e_p99_ms: float
    e2e_p999_ms: float
    bookie_cpu_us_per_msg: float
    broker_cpu_us_per_msg: float
    load: float
    # Messages per entry the broker wrote to the bookies (the producers' batches): the broker's work goes by
    # entries, so a cluster whose runs batch less costs the broker more per message.
    msgs_per_entry: float = float("nan")
    # Thread group -> {"cpu_us_per_msg", "wakeups_per_msg", "writes_per_msg", "threads"} over the point (the
    # broker's).
    broker_threads: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def path_cpu_us_per_msg(self) -> float:
        """The broker's CPU per message in the threads that carry messages (``MESSAGE_PATH``): unlike the whole
        broker's, none of it is paid per second whatever the rate (the JIT, the admin API this bench polls, JFR),
        so it compares between runs of different rates."""
        if not self.broker_threads:
            return float("nan")
        return sum(v["cpu_us_per_msg"] for g, v in self.broker_threads.items() if g in MESSAGE_PATH)


from peer import EARLIER_RUNS_PEER, Peer, add_peer_argument, chosen_peer  # noqa: E402
from run_all import (  # noqa: E402  (bench/ is on sys.path when a bench script runs)
    TICKS,
    Cluster,
    cpu_seconds,
    fdatasync_rate,
    load_average,
    prepare_interpreter,
    start_clusters,
    stop_clusters,
    write_section,
)
from workdir import add_workdir_argument, kept_run_directory  # noqa: E402  (bench/ is on sys.path when a bench script runs)

# ----------------------------------------------------------------------------------------------- the load tools

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_AGG_LATENCY = re.compile(r"Aggregated latency stats --- Latency: mean: +" + _NUM + r" ms - med: +" + _NUM
                          + r" - 95pct: +" + _NUM + r" - 99pct: +" + _NUM + r" - 99\.9pct: +" + _NUM)
_AGG_SENT = re.compile(r"Aggregated throughput stats --- +" + _NUM + r" records sent")
_AGG_RECEIVED = re.compile(r"Aggregated throughput stats --- +" + _NUM + r" records received")


def _f(text: str) -> float:
    return float(text.replace(",", ""))


def perf_classpath() -> str:
    """Pulsar's load tools (pulsar-testclient) and their client, as a classpath."""
    from bookie_fleet.pulsar import LOAD_TOOLS

    return f"{LOAD_TOOLS.lib}/*"


def perf_tool(command: str, args: list[str], workdir: Path, name: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``pulsar-perf <command>`` (PulsarPerfTestTool) as its own process group, its output in a log file."""
    conf = workdir / "perf-client.conf"  # PulsarPerfTestTool's first argument: client settings; ours are defaults
    conf.touch()
    log4j = workdir / "perf-log4j2.properties"
    log4j.write_text("status = error\nappender.c.type = Console\nappender.c.name = c\n"
                     "appender.c.layout.type = PatternLayout\nappender.c.layout.pattern = %-5p %c{1} - %m%n\n"
                     "rootLogger.level = warn\nrootLogger.appenderRef.c.ref = c\n"
                     "logger.t.name = org.apache.pulsar.testclient\nlogger.t.level = info\n")
    log = workdir / f"{name}.log"
    cmd = [shutil.which("java") or "java", *TOOL_JVM, java_tmpdir(workdir / "tmp"),
           f"-Dlog4j2.configurationFile={log4j}", "-cp", perf_classpath(),
           "org.apache.pulsar.testclient.PulsarPerfTestTool", str(conf), command, *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    return proc, log


def _kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    signal_group(proc, sig)  # nothing once reaped: its group id may be someone else's by then


def _wait_for_line(proc: subprocess.Popen[bytes], log: Path, needle: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while needle not in log.read_text(errors="replace"):
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name} exited ({proc.returncode}) before {needle!r}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{log.name}: no {needle!r} in {timeout} s:\n{_tail(log)}")
        time.sleep(0.2)


def _tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:]


def parse_producer(text: str) -> tuple[int, tuple[float, float, float]]:
    """Messages sent (acknowledged) and the publish latency p50/p99/p99.9 in ms. Its aggregated rate is not
    used: it divides by the tool's whole life, which ends on its 10 s reporting tick, not at ``-time``."""
    sent, latency = _AGG_SENT.search(text), _AGG_LATENCY.search(text)
    if sent is None or latency is None:
        raise RuntimeError(f"the producer printed no aggregated stats:\n{text[-3000:]}")
    return int(_f(sent.group(1))), (_f(latency.group(2)), _f(latency.group(4)), _f(latency.group(5)))


def parse_consumer(text: str) -> tuple[int, tuple[float, float, float]]:
    """Messages received and the end-to-end latency p50/p99/p99.9 in ms."""
    received, latency = _AGG_RECEIVED.search(text), _AGG_LATENCY.search(text)
    if received is None or latency is None:
        raise RuntimeError(f"the consumer printed no aggregated stats:\n{text[-3000:]}")
    return int(_f(received.group(1))), (_f(latency.group(2)), _f(latency.group(4)), _f(latency.group(5)))


class Delivered(threading.Thread):
    """The broker's count of messages delivered to the subscription, summed over the point's topics, sampled
    every ``POLL_S`` (``msgOutCounter`` of the topic stats). The load tools print their own rates every 10 s
    only, and the consumer's aggregate divides by its whole life, most of it spent before the producer starts."""

    def __init__(self, broker: Any, topics: list[str]) -> None:
        super().__init__(daemon=True)
        self.broker, self.topics = broker, topics
        self.samples: list[tuple[float, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            total = 0
            for topic in self.topics:
                with contextlib.suppress(AssertionError, OSError, KeyError, ValueError):
                    stats = self.broker.admin("GET", f"persistent/public/default/{topic}/stats")
                    total += int(stats["subscriptions"]["sub"]["msgOutCounter"])
            self.samples.append((time.monotonic(), total))
            self.stopped.wait(POLL_S)

    @property
    def count(self) -> int:
        return self.samples[-1][1] if self.samples else 0

    def rate(self) -> float:
        """Messages per second from the first sample that saw any to the first that saw them all."""
        return delivery_rate(self.samples)


def delivery_rate(samples: list[tuple[float, int]]) -> float:
    final = max((c for _, c in samples), default=0)
    start = next(((t, c) for t, c in samples if c > 0), None)
    end = next((t for t, c in samples if c == final), None)
    if start is None or end is None or end <= start[0]:
        return float("nan")
    return (final - start[1]) / (end - start[0])


# ----------------------------------------------------------------------------------------------- broker threads

@dataclass(frozen=True)
class ThreadSample:
    name: str  # the kernel's name of the thread (15 characters at most)
    cpu_s: float
    wakeups: int  # voluntary context switches: an event loop's sleeps in epoll_wait (or a wait on a lock) ended
    # Write system calls (syscw): Netty's epoll channels write with write() / writev(). Their reads do not show
    # in the kernel's syscr (0 at every point), so the wakeups stand for them.
    writes: int


def thread_samples(pid: int) -> dict[int, ThreadSample]:
    """Every thread of the process now, by thread id; a thread that exits while it is read is left out."""
    samples: dict[int, ThreadSample] = {}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (task / "stat").read_text()
                ticks = stat.rsplit(")", 1)[1].split()
                io = dict(line.split(": ", 1) for line in (task / "io").read_text().splitlines())
                status = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines())
                samples[int(task.name)] = ThreadSample(stat[stat.index("(") + 1:stat.rindex(")")],
                                                       (int(ticks[11]) + int(ticks[12])) / TICKS,
                                                       int(status["voluntary_ctxt_switches"]), int(io["syscw"]))
    return samples


_JCMD_THREAD = re.compile(r'^"(.*)" .*\bnid=(0x[0-9a-f]+|[0-9]+)\b', re.MULTILINE)


def java_thread_names(pid: int) -> dict[int, str]:
    """Thread id -> full Java thread name from ``jcmd <pid> Thread.print`` (the kernel keeps 15 characters:
    "BookKeeperClien"); empty when jcmd cannot attach, and the kernel's names are used."""
    try:
        out = subprocess.run([shutil.which("jcmd") or "jcmd", str(pid), "Thread.print"], capture_output=True,
                             text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_thread_print(out)


def parse_thread_print(text: str) -> dict[int, str]:
    """Thread id (the ``nid``, hexadecimal) -> name, from a thread dump's header lines."""
    return {int(nid, 0): name for name, nid in _JCMD_THREAD.findall(text)}


def thread_group(name: str) -> str:
    """A thread's pool: its name without the numbers ("bookkeeper-io-3-2" -> "bookkeeper-io",
    "BookKeeperClientWorker-OrderedExecutor-1-0" -> "BookKeeperClientWorker-OrderedExecutor"), and without what
    follows an "@" (Jetty names its acceptors after an object's hash and its listening address)."""
    return re.sub(r"[-_# ]*[0-9]+", "", name.split("@", 1)[0]).strip("-_# ") or name


def thread_usage(before: dict[int, ThreadSample], after: dict[int, ThreadSample], names: dict[int, str],
                 messages: int) -> dict[str, dict[str, float]]:
    """CPU, wakeups and write calls per message of each thread group between two samples; a thread started in
    between counts from zero (one that ended in between is not seen)."""
    zero = ThreadSample("", 0.0, 0, 0)
    groups: dict[str, dict[str, float]] = {}
    per_msg = 1 / max(1, messages)
    for tid, end in after.items():
        start = before.get(tid, zero)
        g = groups.setdefault(thread_group(names.get(tid, end.name)),
                              {"cpu_us_per_msg": 0.0, "wakeups_per_msg": 0.0, "writes_per_msg": 0.0, "threads": 0})
        g["cpu_us_per_msg"] += (end.cpu_s - start.cpu_s) * 1e6 * per_msg
        g["wakeups_per_msg"] += (end.wakeups - start.wakeups) * per_msg
        g["writes_per_msg"] += (end.writes - start.writes) * per_msg
        g["threads"] += 1
    return groups


# ----------------------------------------------------------------------------------------------- one point

def run_point(broker: Any, cluster: Cluster, w: Workload, seconds: int, name: str, workdir: Path
              ) -> tuple[int, tuple[float, float, float], int, float, tuple[float, float, float], float, float,
                         dict[str, dict[str, float]], float]:
    """A consumer subscribed first, then the producer for ``seconds``, then the backlog drained (at most
    ``DRAIN_S``). Returns the producer's and consumer's figures, the bookie and broker CPU seconds and the
    broker's use per thread group and the messages per entry it wrote."""
    topic = f"persistent://public/default/{name}"
    common = ["-u", broker.service_url, "-t", str(w.topics)]
    consumer, clog = perf_tool("consume", [*common, "-ss", "sub", topic], workdir, f"{name}-consumer")
    delivered = Delivered(broker, [name] if w.topics == 1 else [f"{name}-{i}" for i in range(w.topics)])
    try:
        _wait_for_line(consumer, clog, "Start receiving from", 120)
        delivered.start()
        bookie_cpu, broker_cpu = cpu_seconds(cluster.pids), cpu_seconds([broker.proc.pid])
        threads_before = thread_samples(broker.proc.pid)
        producer, plog = perf_tool("produce", [*common, "-s", str(w.size), "-r", str(UNTHROTTLED_RATE),
                                               "-o", str(MAX_OUTSTANDING), "-time", str(seconds),
                                               *([] if w.batching else ["-db"]), topic], workdir, f"{name}-producer")
        try:
            producer.wait(seconds + 180)
        finally:
            _kill(producer)
        sent, pub = parse_producer(plog.read_text(errors="replace"))
        deadline = time.monotonic() + DRAIN_S
        while delivered.count < sent and time.monotonic() < deadline and consumer.poll() is None:
            time.sleep(POLL_S)
        bookie_cpu = cpu_seconds(cluster.pids) - bookie_cpu
        broker_cpu = cpu_seconds([broker.proc.pid]) - broker_cpu
        threads_after = thread_samples(broker.proc.pid)
        _kill(consumer, signal.SIGTERM)  # its shutdown hook prints the aggregated stats
        consumer.wait(60)
        received, e2e = parse_consumer(clog.read_text(errors="replace"))
    finally:
        delivered.stopped.set()
        _kill(consumer)
    delivered.join(10)
    threads = thread_usage(threads_before, threads_after, java_thread_names(broker.proc.pid), sent)
    entries = entries_added(broker, delivered.topics)
    reclaim(broker, cluster, delivered.topics)
    return (sent, pub, received, delivered.rate(), e2e, bookie_cpu, broker_cpu, threads,
            sent / entries if entries else float("nan"))


def entries_added(broker: Any, topics: list[str]) -> int:
    """Entries the broker added to its managed ledgers of the topics (``entriesAddedCounter``); 0 if unknown."""
    total = 0
    for topic in topics:
        with contextlib.suppress(AssertionError, OSError, KeyError, ValueError):
            total += int(broker.admin("GET", f"persistent/public/default/{topic}/internalStats")["entriesAddedCounter"])
    return total


def reclaim(broker: Any, cluster: Cluster, topics: list[str]) -> None:
    """After a point, outside its measurement: its topics deleted (the broker deletes their ledgers) and a forced
    GC on every bookie. Without it a full run keeps tens of GB of acknowledged messages, and bookies whose disk
    passes its usage threshold turn read-only in the middle of a point."""
    from gc_bench import forced_gc

    for topic in topics:
        try:
            broker.admin("DELETE", f"persistent/public/default/{topic}?force=true")
        except (AssertionError, OSError) as exc:
            print(f"deleting {topic} failed: {str(exc)[-300:]}", flush=True)
    for bookie in cluster.bookies:
        try:
            forced_gc(bookie)
        except Exception as exc:  # a GC that did not run leaves disk in use, not a wrong figure
            print(f"forced GC on {bookie.bookie_id} failed: {str(exc)[-300:]}", flush=True)


def measure(broker: Any, cluster: Cluster, w: Workload, seconds: int, r: int, workdir: Path) -> E2ePoint:
    load = load_average()
    name = f"{cluster.impl}-r{r}-{w.label}-{time.monotonic_ns() % 10**9}"
    try:
        sent, pub, received, crate, e2e, bcpu, kcpu, threads, batch = run_point(broker, cluster, w, seconds, name,
                                                                                 workdir)
    except Exception as exc:  # one failed point must not lose the whole run
        print(f"point {name} failed: {str(exc)[-2000:]}", flush=True)
        nan = float("nan")
        return E2ePoint(cluster.impl, r, w.batching, w.size, w.topics, 0, nan, nan, nan, nan, 0, nan, nan, nan, nan,
                        nan, nan, load)
    per_msg = 1e6 / max(1, sent)
    # The producer sends for exactly ``seconds`` (its -time, from its producers' creation); what it counts as
    # sent is what the broker acknowledged, the last of it just after that window.
    return E2ePoint(cluster.impl, r, w.batching, w.size, w.topics, sent, sent / seconds, *pub, received, crate, *e2e,
                    bcpu * per_msg, kcpu * per_msg, load, batch, threads)


# ----------------------------------------------------------------------------------------------- the run

def start_brokers(workdir: Path, zk_connect: str, clusters: dict[str, Cluster], ensemble: tuple[int, int, int],
                  jvm: tuple[str, ...], started: dict[str, Any]) -> None:
    """One broker per cluster, both coming up at once (each start is minutes of JIT on a loaded machine);
    ``started`` filled first, so a failure still stops what runs."""
    from bookie_fleet.pulsar import PulsarBroker

    for impl, c in clusters.items():
        started[impl] = PulsarBroker(workdir / f"broker-{impl}", zk_connect, c.root, chroot=f"/pulsar-{impl}",
                                     log_level="warn", settings=broker_settings(ensemble, jvm), jvm_opts=jvm)
    with ThreadPoolExecutor(len(started)) as pool:
        for done in [pool.submit(_bring_up, broker) for broker in started.values()]:
            done.result()


def _bring_up(broker: Any) -> None:
    broker.setup_metadata()
    broker.start()


def run(rounds: int, seconds: int, count: int, ensemble: tuple[int, int, int], workloads: tuple[Workload, ...],
        warmups: int, warm: tuple[Workload, ...], broker_jvm: tuple[str, ...], workdir: Path, peer: Peer
        ) -> tuple[list[E2ePoint], dict[str, Any]]:
    from bookie_fleet.pulsar import NEWEST
    from bookie_fleet.zookeeper import ZooKeeperServer

    facts: dict[str, Any] = {"cores": os.cpu_count(), "platform": platform.platform(),
                             "python": platform.python_version(), "load_before": load_average(),
                             "fdatasync_per_s": fdatasync_rate(workdir, 3 if rounds > 1 else 0.5),
                             "broker_version": NEWEST.version, "tool_version": _tool_version(),
                             "peer": peer.version}
    print(f"machine: {facts}", flush=True)
    points: list[E2ePoint] = []
    loads: list[float] = []
    zk = ZooKeeperServer(workdir / "zk").start()
    clusters: dict[str, Cluster] = {}
    brokers: dict[str, Any] = {}
    try:
        start_clusters(workdir, zk.connect_string, count, ("java", "ours"), clusters, peer=peer)
        start_brokers(workdir, zk.connect_string, clusters, ensemble, broker_jvm, brokers)
        # Warm-up: the brokers' and Java bookies' JIT, the first ledgers of each broker; not recorded.
        for i in range(warmups):
            for w in warm:
                for impl in ("java", "ours"):
                    p = measure(brokers[impl], clusters[impl], w, seconds, -1 - i, workdir)
                    print(f"warm-up {impl} {w.point}: {p.publish_rate:.0f} msg/s", flush=True)
        step = 0
        for r in range(rounds):
            for w in workloads:
                for impl in (("java", "ours") if step % 2 == 0 else ("ours", "java")):
                    p = measure(brokers[impl], clusters[impl], w, seconds, r, workdir)
                    points.append(p)
                    loads.append(load_average())
                    print(f"r{r} {impl:<4} {w.label:<16} publish {p.publish_rate:8.0f}/s p50 {p.publish_p50_ms:7.1f} "
                          f"p99 {p.publish_p99_ms:7.1f} p99.9 {p.publish_p999_ms:7.1f} ms; consume "
                          f"{p.consume_rate:8.0f}/s e2e p50 {p.e2e_p50_ms:7.1f} p99 {p.e2e_p99_ms:7.1f} ms; "
                          f"bookie cpu {p.bookie_cpu_us_per_msg:6.1f} broker cpu {p.broker_cpu_us_per_msg:6.1f} "
                          "us/msg; "
                          f"{p.msgs_per_entry:.1f} msg/entry; load {p.load:.1f}", flush=True)
                    print("\n".join(thread_table([p], w, (impl,))), flush=True)
                    print(f"point {json.dumps(asdict(p))}", flush=True)  # an interrupted run keeps its points
                step += 1
    finally:
        for broker in brokers.values():
            broker.stop()
        stop_clusters(clusters)
        zk.stop()
    facts["load_after"] = load_average()
    seen = [*loads, facts["load_after"]]
    facts["load_during"] = [min(seen), max(seen)]
    return points, facts


def _tool_version() -> str:
    jars = sorted(Path(perf_classpath()[:-2]).glob("pulsar-testclient-*.jar"))
    return jars[0].name.removeprefix("pulsar-testclient-").removesuffix(".jar") if jars else "?"


# ----------------------------------------------------------------------------------------------- the report

def _median(points: list[E2ePoint], impl: str, w: Workload, attr: str) -> float:
    values = [getattr(p, attr) for p in points
              if p.impl == impl and (p.batching, p.size, p.topics) == (w.batching, w.size, w.topics)]
    values = [v for v in values if v == v]  # NaN: a failed point
    return statistics.median(values) if values else float("nan")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if a == a and b == b and b else "n/a"


def noise(points: list[E2ePoint], impl: str) -> float:
    """Round-to-round spread of the publish rate (max - min over the median), median over the points, in %."""
    spreads = []
    for w in {Workload(p.batching, p.size, p.topics) for p in points}:
        rates = [p.publish_rate for p in points if p.impl == impl and (p.batching, p.size, p.topics)
                 == (w.batching, w.size, w.topics) and p.publish_rate == p.publish_rate]
        if len(rates) > 1 and statistics.median(rates):
            spreads.append((max(rates) - min(rates)) / statistics.median(rates))
    return 100 * statistics.median(spreads) if spreads else float("nan")


def by_thread(points: list[E2ePoint]) -> bool:
    """Do the results carry the broker's figures by thread and its messages per entry? Results recorded before
    the bench measured them do not: their table leaves those columns out rather than print NaN."""
    return any(p.broker_threads for p in points)


def table(points: list[E2ePoint], workloads: tuple[Workload, ...]) -> list[str]:
    newer = by_thread(points)
    header = ("| batching | size | topics | ours publish msg/s | Java publish msg/s | ratio "
              "| ours p50 / p99 / p99.9 ms | Java p50 / p99 / p99.9 ms | p99 ratio "
              "| ours e2e p50 / p99 ms | Java e2e p50 / p99 ms "
              "| ours consume msg/s | Java consume msg/s | ours bookie CPU us/msg | Java bookie CPU us/msg "
              "| ours broker CPU us/msg | Java broker CPU us/msg "
              + ("| ours broker message-path CPU us/msg | Java broker message-path CPU us/msg | ours msg/entry "
                 "| Java msg/entry " if newer else "") + "| load |")
    rows = [header, "|---" * header.count(" | ") + "|---|"]
    for w in workloads:
        o = {f.name: _median(points, "ours", w, f.name) for f in fields(E2ePoint) if f.type == "float"}
        j = {f.name: _median(points, "java", w, f.name) for f in fields(E2ePoint) if f.type == "float"}
        newer_cells = (f"| {_median(points, 'ours', w, 'path_cpu_us_per_msg'):.1f} "
                       f"| {_median(points, 'java', w, 'path_cpu_us_per_msg'):.1f} "
                       f"| {o['msgs_per_entry']:.1f} | {j['msgs_per_entry']:.1f} ") if newer else ""
        rows.append(
            f"| {'on' if w.batching else 'off'} | {w.size // 1024} KiB | {w.topics} | {o['publish_rate']:.0f} "
            f"| {j['publish_rate']:.0f} | {_ratio(o['publish_rate'], j['publish_rate'])} "
            f"| {o['publish_p50_ms']:.1f} / {o['publish_p99_ms']:.1f} / {o['publish_p999_ms']:.1f} "
            f"| {j['publish_p50_ms']:.1f} / {j['publish_p99_ms']:.1f} / {j['publish_p999_ms']:.1f} "
            f"| {_ratio(o['publish_p99_ms'], j['publish_p99_ms'])} | {o['e2e_p50_ms']:.0f} / {o['e2e_p99_ms']:.0f} "
            f"| {j['e2e_p50_ms']:.0f} / {j['e2e_p99_ms']:.0f} | {o['consume_rate']:.0f} | {j['consume_rate']:.0f} "
            f"| {o['bookie_cpu_us_per_msg']:.1f} | {j['bookie_cpu_us_per_msg']:.1f} "
            f"| {o['broker_cpu_us_per_msg']:.1f} | {j['broker_cpu_us_per_msg']:.1f} "
            + newer_cells + f"| {statistics.median([o['load'], j['load']]):.1f} |")
    return rows


THREAD_ROWS = 8  # the thread groups with the most CPU per point; the rest summed in one row
IMPL_NAMES = {"ours": "ours", "java": "Java"}


def _thread_medians(points: list[E2ePoint], impl: str, w: Workload) -> dict[str, dict[str, float]]:
    """Per thread group, the median over the rounds of each figure (a group absent from a round counts 0)."""
    rounds = [p.broker_threads for p in points if p.impl == impl and p.broker_threads
              and (p.batching, p.size, p.topics) == (w.batching, w.size, w.topics)]
    groups = {g for r in rounds for g in r}
    return {g: {k: statistics.median([r.get(g, {}).get(k, 0.0) for r in rounds])
                for k in ("cpu_us_per_msg", "wakeups_per_msg", "writes_per_msg")} for g in groups}


def thread_table(points: list[E2ePoint], w: Workload, impls: tuple[str, ...] = ("ours", "java")) -> list[str]:
    """The broker's CPU, wakeups and write calls per message by thread group at one point (medians over rounds), the
    groups with the most CPU first; no lines when the points carry no thread figures."""
    by_impl = {impl: _thread_medians(points, impl, w) for impl in impls}
    groups = sorted({g for m in by_impl.values() for g in m},
                    key=lambda g: -max(m.get(g, {}).get("cpu_us_per_msg", 0.0) for m in by_impl.values()))
    if not groups:
        return []
    shown, rest = groups[:THREAD_ROWS], groups[THREAD_ROWS:]
    names = [IMPL_NAMES[i] for i in impls]
    rows = [f"Broker threads at {w.point} ({'batching ' + ('on' if w.batching else 'off')}, {w.size // 1024} KiB, "
            f"{w.topics} topic(s)), per message published:", "",
            "| broker thread group | " + " | ".join(f"{n} CPU us/msg" for n in names) + " | "
            + " | ".join(f"{n} wakeups/msg" for n in names) + " | " + " | ".join(f"{n} writes/msg" for n in names)
            + " |", "|---" * (1 + 3 * len(impls)) + "|"]

    def row(label: str, members: list[str]) -> str:
        cells = [f"{sum(by_impl[i].get(g, {}).get(k, 0.0) for g in members):{fmt}}"
                 for k, fmt in (("cpu_us_per_msg", ".1f"), ("wakeups_per_msg", ".3f"), ("writes_per_msg", ".3f"))
                 for i in impls]
        return f"| {label} | " + " | ".join(cells) + " |"

    rows += [row(g, [g]) for g in shown]
    if rest:
        rows.append(row(f"{len(rest)} other groups", rest))
    rows.append(row("all threads", groups))
    return rows


def report(points: list[E2ePoint], facts: dict[str, Any], settings: dict[str, Any], command: str,
           chosen: bool = False) -> str:
    """The docs section: the whole table's (``chosen`` False) or, for a run of chosen points, a subsection of its
    own under its own markers."""
    workloads = tuple(w for w in WORKLOADS if any((p.batching, p.size, p.topics) == (w.batching, w.size, w.topics)
                                                  for p in points))
    changed = ", ".join(f"`{k}={v}`" for k, v in broker_settings(tuple(settings["ensemble"])).items())
    threads: list[str] = []
    for w in workloads:
        rows = thread_table(points, w)
        threads += ["", *rows] if rows else []
    return "\n".join([
        POINTS_BEGIN if chosen else BEGIN,
        (f"### Chosen points ({', '.join(w.point for w in workloads)}): broker CPU by thread" if chosen else
         "## Pulsar end to end: Pulsar's load tools through a broker on our bookies and on Apache BookKeeper's"),
        "",
        f"Command: `{command}`  ",
        f"Machine: {facts['cores']} cores, {facts['platform']}, Python {facts['python']}; disk fdatasync "
        f"{facts['fdatasync_per_s']:.0f}/s measured in the same run. **Shared and loaded**: load average (1 min) "
        f"{facts['load_before']:.1f} before the run, {facts['load_after']:.1f} after, "
        f"{facts['load_during'][0]:.1f}-{facts['load_during'][1]:.1f} between points (the last column gives it at "
        f"the start of each point), on {facts['cores']} cores shared with other work; rounds alternate which "
        "implementation goes first so both see the same load, and only ratios within this run compare.  ",
        (f"Round-to-round noise of the publish rate (spread of a point's rounds over its median, median over "
         f"points): ours {noise(points, 'ours'):.0f}%, Java {noise(points, 'java'):.0f}%.  " if settings["rounds"] > 1
         else "One round: this run gives no round-to-round noise (see the reading below the table).  "),
        f"Broker: Apache Pulsar {facts['broker_version']} (`PulsarBrokerStarter`), one per implementation, the same "
        f"settings for both: persistence {'/'.join(map(str, settings['ensemble']))} (ensemble/write/ack quorum), "
        "v2 wire protocol and every other `bookkeeperClient*` option at Pulsar's defaults. broker.conf as written: "
        f"{changed}; everything else Pulsar's default. The JVM of Pulsar's `pulsar_env.sh` with half its memory "
        f"(two brokers share this machine): `{' '.join(BROKER_JVM[:8])}`.  ",
        f"Bookies: {settings['bookies']} per implementation, as in the suite (journal fsync on, 1 ms group wait; "
        f"Apache BookKeeper {facts.get('peer', EARLIER_RUNS_PEER)} with DbLedgerStorage and the JVM of its "
        "bin/bookkeeper).  ",
        f"Load tools: Pulsar's `pulsar-perf produce` / `consume` (PerformanceProducer / PerformanceConsumer) from "
        f"pulsar-testclient {facts['tool_version']}, the newest version the Maven repository we use serves (none "
        f"of the {facts['broker_version'].rsplit('.', 1)[0]} line), with its own client; JVM "
        f"`{' '.join(TOOL_JVM[:5])}`. Per point, one consumer per topic subscribes (exclusive, from the latest "
        f"message) before the producer starts; one producer per topic publishes unthrottled for "
        f"{settings['seconds']} s with at most {MAX_OUTSTANDING} messages in flight each (`-o {MAX_OUTSTANDING}`), "
        "batching at pulsar-perf's defaults (a 1 ms window, at most 1000 messages or 4 MiB a batch) or off "
        "(`-db`); the consumer drains "
        "what is left and is stopped. New topics every point; after it, outside its measurement, its topics are "
        "deleted and every bookie runs a forced GC (disk space). Publish latency: send to acknowledgement, from "
        "the producer's aggregate after its 1 s warm-up; end-to-end: publish time to receipt, from the "
        "consumer's aggregate (ms resolution); consume rate: the broker's count of messages delivered to the "
        f"subscription (`msgOutCounter`, sampled every {POLL_S} s) from the first sample that saw any to the first "
        "that saw them all. Publish rate: messages acknowledged over the producer's sending time (its "
        "`-time`). Unthrottled producers measure the saturated point, so publish latency includes the queue "
        "of the outstanding messages. Bookie and broker CPU: utime + stime from /proc of the cluster's bookie "
        "processes and of its broker, from the producer's start until the consumer has every message, over the "
        "point, per message published. "
        + ("Messages per entry: the messages published over the entries the broker added to its ledgers "
           "(`entriesAddedCounter`), the producers' batch size as the bookies see it. Broker message-path CPU: the "
           f"broker's CPU in the threads that carry messages ({', '.join(MESSAGE_PATH)}), per message published; "
           "the rest of the broker's CPU is mostly paid per second whatever the rate (the JIT, `pulsar-web` serving "
           "the stats this bench polls), so the whole broker's CPU per message rises when the rate falls. "
           if by_thread(points) else "") +
        f"Warm-up: {settings['warmups']} pass(es) of "
        f"{', '.join(settings.get('warm_points', [QUICK_WORKLOAD.point]))} (batching-size-topics) on each broker, "
        f"not recorded. {settings['rounds']} round(s); medians over rounds."
        + (" Broker threads: each thread's utime + stime, its wakeups (voluntary context switches: an event "
           "loop's returns from epoll_wait, or a wait on a lock) and its write system calls (syscw of "
           "/proc/<pid>/task/<tid>/io; Netty's epoll channels write with write()/writev()) over the same window, "
           "grouped by the Java thread name (`jcmd Thread.print`) without its numbers. The broker's BookKeeper "
           "client shares the broker's `pulsar-io` event loops (no `bookkeeper-io` threads)."
           if threads else ""),
        "",
        *table(points, workloads),
        "",
        "Ratios: ours/Java; publish rate > 1 is ours faster, p99 < 1 is ours lower (better).",
        *threads,
        "",
        POINTS_END if chosen else END,
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one short point on both implementations; docs untouched")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10, help="the producer's run per point")
    parser.add_argument("--warmups", type=int, default=2, help="warm-up passes per implementation")
    add_workdir_argument(parser)
    parser.add_argument("--points", default=None,
                        help="only these points, comma-separated (e.g. on-1k-8,on-16k-8: batching on/off, size, "
                             "topics); their section of the docs and bench/pulsar_e2e_points_results.json, not the "
                             "whole table's")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the docs section from bench/pulsar_e2e_results.json, measuring nothing")
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.rounds < 1 or args.seconds < 2 or args.warmups < 0:
        parser.error(f"--rounds must be >= 1, --seconds >= 2 and --warmups >= 0 (got {args.rounds}, "
                     f"{args.seconds}, {args.warmups})")
    try:
        chosen = chosen_workloads(args.points) if args.points is not None else None
    except ValueError as exc:
        parser.error(f"--points: {exc}")
    if chosen is not None and args.quick:
        parser.error("--points and --quick do not go together (--quick runs its one short point)")
    results, begin, end = (POINTS_RESULTS, POINTS_BEGIN, POINTS_END) if chosen else (RESULTS, BEGIN, END)
    if args.report_only:
        saved = json.loads(results.read_text())
        write_section(DOCS, report([E2ePoint(**p) for p in saved["points"]], saved["facts"], saved["settings"],
                                   saved["command"], chosen=bool(chosen)), begin, end)
        return 0
    prepare_interpreter()
    perf_classpath()  # a missing classpath fails now, not after the clusters started
    peer = chosen_peer(parser, args)
    rounds, seconds, warmups, count, ensemble, workloads = (args.rounds, args.seconds, args.warmups, 3, PERSISTENCE,
                                                            chosen or WORKLOADS)
    # A run of chosen points warms up on them: the broker's JIT otherwise still compiles their paths (the 8-topic
    # and 16 KiB ones) during the first measured rounds, seconds of CPU per point. A full run keeps the one short
    # point, which its sixteen measurements then warm further.
    warm = chosen or (QUICK_WORKLOAD,)
    broker_jvm: tuple[str, ...] = BROKER_JVM
    if args.quick:
        rounds, seconds, warmups, count, ensemble, workloads = 1, 3, 0, 1, (1, 1, 1), (QUICK_WORKLOAD,)
        # The quick run checks that the bench works, not how fast: the brokers get the tests' fast-start JVM
        # (bookie_fleet.pulsar.JVM_OPTS: C1 only, serial GC, small heap), which starts in a fraction of the time.
        from bookie_fleet.pulsar import JVM_OPTS

        broker_jvm = JVM_OPTS
    workdir = kept_run_directory(args.workdir, "pulsar-e2e-")
    try:
        points, facts = run(rounds, seconds, count, ensemble, workloads, warmups, warm, broker_jvm, workdir, peer)
    finally:
        if not os.environ.get("PULSAR_E2E_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)
    command = ("python bench/pulsar_e2e_bench.py" + (f" --points {','.join(w.point for w in chosen)}" if chosen else "")
               + (f" --rounds {rounds}" if rounds != 2 else "") + (f" --seconds {seconds}" if seconds != 10 else "")
               + (f" --warmups {warmups}" if warmups != 2 else "") + (f" --peer {args.peer}" if args.peer else ""))
    settings = {"rounds": rounds, "seconds": seconds, "warmups": warmups, "bookies": count,
                "ensemble": list(ensemble), "warm_points": [w.point for w in warm]}
    section = report(points, facts, settings, command, chosen=bool(chosen))
    print(section)
    print(json.dumps([asdict(p) for p in points]))
    if not args.quick:
        results.write_text(json.dumps({"command": command, "facts": facts, "settings": settings,
                                       "points": [asdict(p) for p in points]}, indent=1) + "\n")
        write_section(DOCS, section, begin, end)
    return 0 if all(p.sent > 0 and p.received > 0 for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
