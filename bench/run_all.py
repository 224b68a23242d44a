"""The whole benchmark suite in one command: our bookie next to Apache BookKeeper, same machine, same run.
(One script over the usual module size: a benchmark is read top to bottom next to the numbers it printed.)

    python bench/run_all.py                    # full run: rewrites the suite's sections of docs/benchmarks.md
    python bench/run_all.py --profile          # also a py-spy flame graph of our bookie (docs/profiles/)
    python bench/run_all.py --quick            # tiny run for the test suite (tests/bench/), docs untouched
    python bench/run_all.py --impls ours --sizes 16384 --ours-config dbStorage_writeCacheMaxSizeMb=512 --no-docs
                                               # one question, ours alone, at a setting other than its default

It prepares what it needs (``scripts/bootstrap`` when ``$BOOKIE_FLEET_BK_LIB`` is not set: the Maven-assembled
BookKeeper jars, which include its ``bookkeeper-benchmark`` tools),
starts one real ZooKeeper and two clusters of three bookies each on this machine, every bookie with its own
data directory on the same disk, journal fsync on: three Apache BookKeeper bookies (DbLedgerStorage; the release
of ``--peer``, bench/peer.py: the newest the bootstrap assembled unless named) under
``/java/ledgers`` and three of ours under ``/ours/ledgers``. Both clusters stay up; only one is loaded at a
time, and every workload point alternates which implementation goes first, round after round, so the drift
of a shared machine cancels out in the ratios. Reported values are medians over the rounds.

Both peers run as their users run them: Apache BookKeeper's bookies with the JVM its ``bin/bookkeeper`` gives a
bookie (``PRODUCTION_JVM_OPTS``: G1, 1 GB heap, 2 GB direct memory, full tiered compilation) and its own defaults,
not the test suite's fast-start settings; ours as the image runs it. Before any measured point each
implementation is warmed up (``warm_up``: headline-point passes until one is within 5% of the previous), and
points are long enough for steady state; the report shows the warm-up passes next to the round-to-round noise.

Workloads (``--workloads``, comma-separated; all by default):

* ``adds``: BookKeeper's own ``BenchThroughputLatency`` (Java client, pointed at a ZooKeeper chroot): entry
  sizes, ensemble/write/ack quorum 1/1/1 and 3/2/2, v3 and v2; throughput, p50, p99 (from its latency dump)
  and the bookies' CPU seconds per 100k entries (utime + stime of the bookie processes, /proc/<pid>/stat);
* ``reads``: catch-up reads of a closed 1 KiB ledger with ``BenchReadThroughputLatency`` and with our Python
  client; tailing reads (our client following a writer at a fixed rate: long-poll ``read_lac_and_entry`` when
  caught up, batched reads of what is confirmed when behind);
* ``pyclient``: adds from our Python client (``LedgerHandle.append``) against the same bookies;
* ``compaction``: one more bookie per implementation, both with the same GC settings (GC_CONF), holding the same
  prepared store (``--gc-mib`` of 1 MiB ledgers, ``--gc-garbage`` of them deleted, interleaved with the live
  ones in every entry log); a forced major compaction (``PUT /api/v1/bookie/gc {"forceMajor": true}``) on
  each, under a light add load from our client: live bytes rewritten per second, time to reclaim the space,
  p99 of the adds with and without compaction.

Machine facts (cores, load average at each point, fdatasync rate, sequential write bandwidth) are measured in
the same run. Every measured point starts with the machine's memory full of page cache (``FullPageCache``: on
these virtual machines a page taken from free memory costs a host-side fault at its first write, a page reclaimed
from the page cache does not, and a bookie that has been running reclaims).
Results go to bench/results.json and to docs/benchmarks.md between the suite's markers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import mmap
import os
import platform
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bookie_fleet.processes import java_tools_tmpdir, stop_on_sigterm

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"
PROFILES = REPO / "docs" / "profiles"
RESULTS = REPO / "bench" / "results.json"
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"
IMPLS: tuple[str, ...] = ("java", "ours")
PASSWORD = "benchPasswd"  # BookKeeper's benchmark default
BTL = "org.apache.bookkeeper.benchmark.BenchThroughputLatency"
BRTL = "org.apache.bookkeeper.benchmark.BenchReadThroughputLatency"
# BookKeeper's bin/bookkeeper runs its tools (the benchmark client included) with its CLI settings: G1 with a
# 10 ms pause goal, 256 MB to 512 MB of heap; the same client JVM for both implementations.
CLIENT_JVM = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=10", "-Djava.net.preferIPv4Stack=true",
              "-Dio.netty.leakDetectionLevel=disabled", "-Dio.netty.tryReflectionSetAccessible=true",
              "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED")
ENSEMBLES = ((1, 1, 1), (3, 2, 2))
DB_LEDGER_STORAGE = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
TICKS = os.sysconf("SC_CLK_TCK")
# BenchThroughputLatency's -throttle is both its number of outstanding adds and, through the client's
# throttleValue, a rate limit of each ledger handle (entries/s): 256 ledgers lift the cap to 256 x throttle,
# above what either cluster reaches on this machine (with 64, both reached its 64,000/s at 1/1/1).
LEDGERS = 256


# ----------------------------------------------------------------------------------------------- preparation

def prepare_interpreter() -> None:
    """Bootstrap (jars, virtualenv) when this shell has not, and re-run under the project's interpreter, before
    the bench modules (which import the bookie's packages) are imported."""
    if not os.environ.get("BOOKIE_FLEET_BK_LIB"):
        subprocess.run([str(REPO / "scripts" / "bootstrap")], check=True)
        env_sh = Path(os.environ.get("BOOKIE_FLEET_CACHE", Path.home() / ".cache" / "bookie-fleet")) / "env.sh"
        for line in env_sh.read_text().splitlines():
            match = re.match(r'export (\w+)="(.*)"$', line)
            if match:
                os.environ[match.group(1)] = os.path.expandvars(match.group(2))
        if os.environ.get("BOOKIE_FLEET_VENV") and Path(sys.executable).parent != Path(
                os.environ["BOOKIE_FLEET_VENV"]) / "bin":
            venv_python = Path(os.environ["BOOKIE_FLEET_VENV"]) / "bin" / "python"
            os.execv(str(venv_python), [str(venv_python), *sys.argv])
    for sub in ("bookie_image", "fleet"):
        if str(REPO / sub) not in sys.path:
            sys.path.insert(0, str(REPO / sub))


def prepare_profiler() -> None:
    """py-spy, needed only when a run profiles."""
    if py_spy() is None:
        raise SystemExit("py-spy not found: ./scripts/bootstrap installs it (requirements.lock)")


def py_spy() -> str | None:
    return shutil.which("py-spy") or (str(Path(sys.executable).parent / "py-spy")
                                      if (Path(sys.executable).parent / "py-spy").exists() else None)


# ----------------------------------------------------------------------------------------------- machine facts

if __name__ == "__main__":
    prepare_interpreter()

# One probe for every benchmark: bench/ is on sys.path when a bench script runs.
from add_bench import fdatasync_rate  # noqa: E402
from appends import AppendWindow  # noqa: E402
from docs_section import write_section  # noqa: E402
from peer import EARLIER_RUNS_PEER, Peer, add_peer_argument, chosen_peer, running_release  # noqa: E402
from workdir import add_workdir_argument, run_directory  # noqa: E402


def sequential_write_mb_s(directory: Path, megabytes: int) -> float:
    """1 MiB writes of fresh data, one fdatasync at the end: what the disk takes in, page cache included."""
    path = directory / "seq-probe"
    block = os.urandom(1024 * 1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    started = time.perf_counter()
    try:
        for _ in range(megabytes):
            os.write(fd, block)
        os.fdatasync(fd)
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
        path.unlink()
    return megabytes * 1.048576 / elapsed


def load_average() -> float:
    return os.getloadavg()[0]


class FullPageCache:
    """Keeps this machine's memory full of clean page cache before every measured point, as on a bookie's machine
    that has been running: there the journal and entry log writes of a point take their pages from the reclaim of
    old page cache, not from free memory.

    Why it matters here: measured with ``perf`` on our bookies during a 16 KiB point, the kernel's copy into the
    page cache took 56% of their CPU while the point consumed free memory, 14% once memory was full and pages were
    reclaimed: about 50 against 30 us of bookie CPU per add. The likely cause is this VM's balloon device, whose
    free page reporting hands free guest memory back to the host, so that the first write to such a page costs a
    host-side fault. Between points the suite deletes every ledger, freeing
    gigabytes; without this, how much of a point runs in the costly state depends on how long ago its pages were
    freed, not on the implementation. Both implementations' points start from the same full state.

    The fill reads the chunks of a ballast file (the machine's available memory in size) that are not in the page
    cache until free memory is down to ``keep_free``; a point's writes then evict ballast pages as they would
    evict old entry logs. The ballast is a sparse file: reading a hole puts a page of zeros in the page cache,
    written by the kernel as a disk read's data would be, clean and reclaimable the same way, and takes no block
    of the disk. A ballast of real data took as much disk as memory, on the disk the bookies write to: on a
    machine with 24 GiB of memory and 58 GiB of disk free, the disk then fell below the 5% free at which every
    bookie goes read-only part-way through a run."""

    def __init__(self, directory: Path, keep_free: int = 2 * 2**30, chunk: int = 64 * 2**20) -> None:
        self.path, self.keep_free, self.chunk = directory / "page-cache-ballast", keep_free, chunk
        self.size = 0
        self.free_at_points: list[float] = []  # GiB free when each measured point started

    def create(self, size: int | None = None) -> tuple[float, float]:
        """(GiB, seconds): the ballast made and read into the page cache once; by default as large as the memory
        available before the clusters start."""
        if size is None:
            size = _meminfo("MemAvailable")
        self.size = size // self.chunk * self.chunk
        started = time.perf_counter()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, self.size)  # all hole: no block allocated
        finally:
            os.close(fd)
        self.fill(record=False)
        return self.size / 2**30, time.perf_counter() - started

    def fill(self, record: bool = True) -> None:
        """Read the ballast back until free memory is down to ``keep_free`` (or the whole file is cached), and
        note the free memory left (``record``: at the start of a measured point)."""
        if not self.size:
            return
        buffer = bytearray(self.chunk)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for offset in range(0, self.size, self.chunk):
                if _meminfo("MemFree") <= self.keep_free:
                    break
                if _cached_bytes(fd, offset, self.chunk) < self.chunk:
                    os.preadv(fd, [buffer], offset)  # the read puts the chunk back in the page cache
        finally:
            os.close(fd)
        if record:
            self.free_at_points.append(_meminfo("MemFree") / 2**30)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class _CachestatRange(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


_LIBC = ctypes.CDLL(None, use_errno=True)
CACHESTAT = 451  # the system call's number, the same on every architecture


def _cached_bytes(fd: int, offset: int, length: int) -> int:
    """How much of a file's range is in the page cache: the ``cachestat`` system call (Linux 6.5), which neither
    the standard library nor a maintained package wraps; ``posix_fadvise(WILLNEED)`` is no substitute, Linux
    reads at most one readahead window per call."""
    stat = _Cachestat()
    if _LIBC.syscall(CACHESTAT, fd, ctypes.byref(_CachestatRange(offset, length)), ctypes.byref(stat), 0) != 0:
        raise OSError(ctypes.get_errno(), "cachestat")
    return int(stat.cache) * mmap.PAGESIZE


def _meminfo(field: str) -> int:
    """One field of /proc/meminfo, bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the processes (all their threads), from /proc/<pid>/stat."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


# ----------------------------------------------------------------------------------------------- clusters

@dataclass
class Cluster:
    impl: str
    root: str  # ledgers root, "/<chroot>/ledgers"
    zk_connect: str
    bookies: list[Any] = field(default_factory=list)

    @property
    def chroot_connect(self) -> str:
        return self.zk_connect + self.root[: -len("/ledgers")]

    @property
    def pids(self) -> list[int]:
        return [b.proc.pid for b in self.bookies if b.proc is not None]


async def _init_cluster(zk_connect: str, root: str) -> None:
    from bookie.metadata.store import MetadataStore

    async with MetadataStore(zk_connect, root) as store:
        await store.init_cluster()


JOURNAL_RETENTION: dict[str, Any] = {"journalMaxBackups": 1}


def start_clusters(workdir: Path, zk_connect: str, count: int, impls: tuple[str, ...],
                   started: dict[str, Cluster], *, peer: Peer | None,
                   ours_config: dict[str, str] | None = None) -> dict[str, Cluster]:
    """Both clusters, Apache BookKeeper's at the ``peer`` release; ``started`` is filled as they come up, so that
    a failure still stops what runs."""
    from bookie_fleet.java_bookies import plan_java_bookies
    from bookie_fleet.java_bookies import start_all as start_java
    from bookie_fleet.local_bookies import plan_bookies

    if "java" in impls and peer is None:
        raise ValueError("start_clusters: Apache BookKeeper's cluster needs the peer release (bench/peer.py)")
    java = Cluster("java", "/java/ledgers", zk_connect)
    ours = Cluster("ours", "/ours/ledgers", zk_connect)
    for c in (java, ours):
        asyncio.run(_init_cluster(zk_connect, c.root))
    # Same durability and group commit on both: fsync on, 1 ms group wait; Java's own storage defaults. One old
    # journal file kept instead of 5 on both: six bookies x six 2 GB journals would not fit this machine's disk.
    java.bookies = plan_java_bookies(count, workdir / "java", zk_connect, java.root, first_host=221,
                                     production=True, journalSyncData=True, log_level="warn", http=True,
                                     lib_dir=peer.lib if peer else None, ledgerStorageClass=DB_LEDGER_STORAGE,
                                     **JOURNAL_RETENTION)
    ours_keys: dict[str, Any] = {"journalSyncData": True, "journalMaxGroupWaitMSec": 1,
                                 "autoRecoveryDaemonEnabled": False, **JOURNAL_RETENTION, **(ours_config or {})}
    ours.bookies = plan_bookies(count, workdir / "ours", zk_connect, ours.root, first_host=211,
                                admin_token=secrets.token_urlsafe(32), **ours_keys)
    started.update({c.impl: c for c in (java, ours) if c.impl in impls})
    if "java" in impls:
        start_java(java.bookies)
    else:
        java.bookies = []
    if "ours" not in impls:
        ours.bookies = []
    for b in ours.bookies:
        b.start(wait=False)
    for b in ours.bookies:
        try:
            b.wait_ready(90)
        except RuntimeError as exc:  # seen once under load: a fresh bookie refused its own new directory
            print(f"bookie {b.bookie_id} failed to start, retrying on a clean directory: {str(exc)[-300:]}",
                  flush=True)
            b.stop()
            shutil.rmtree(b.data_dir, ignore_errors=True)
            b.start(wait=True, timeout=90)
    return {c.impl: c for c in (java, ours) if c.impl in impls}


def stop_clusters(clusters: dict[str, Cluster]) -> None:
    for c in clusters.values():
        for b in c.bookies:
            with contextlib.suppress(Exception):
                b.stop()


# ----------------------------------------------------------------------------------------------- Java tools

# The tools' logging: a file of the repository, so that a run writes nothing into the machine's temporary
# directory that outlives it.
JAVA_TOOLS_LOG4J2 = Path(__file__).with_name("java-tools-log4j2.properties")


def java_tool(main: str, *args: str, limit_s: float, properties: dict[str, str] | None = None) -> str:
    """Run one of BookKeeper's Java tools; ``properties``: more client keys (TLS, ...), which its
    ClientConfiguration reads from system properties with BookKeeper's readsystemproperties switch."""
    lib = os.environ["BOOKIE_FLEET_BK_LIB"]
    props = [f"-D{k}={v}" for k, v in (properties or {}).items()]
    if props:
        props.insert(0, "-Dorg.apache.bookkeeper.conf.readsystemproperties=true")
    command = [shutil.which("java") or "java", *CLIENT_JVM, java_tools_tmpdir(), *props,
               f"-Dlog4j2.configurationFile={JAVA_TOOLS_LOG4J2}",
               "-cp", f"{lib}/*", main, *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise RuntimeError(f"{main} did not finish in {limit_s}s:\n{out.decode(errors='replace')[-3000:]}") from None
    finally:
        if proc.poll() is None:  # interrupted (Ctrl-C, SIGTERM): never leave the JVM behind
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{main} exited with {proc.returncode}:\n{text[-3000:]}")
    return text


def percentile(sorted_values: list[float], pct: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * pct / 100))]


@dataclass
class Point:
    workload: str  # "btl" | "pyclient" | "catchup-java" | "catchup-py" | "tail-py" | "compaction"
    impl: str
    round: int
    params: dict[str, Any]
    ops_per_s: float
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    cpu_s_per_100k: float = float("nan")
    load: float = 0.0
    count: int = 0
    extra: dict[str, float] = field(default_factory=dict)  # workload-specific values (compaction)


def run_btl(cluster: Cluster, size: int, ens: tuple[int, int, int], v2: bool, seconds: int, throttle: int,
            workdir: Path, properties: dict[str, str] | None = None,
            client_warmup: bool = False) -> tuple[float, float, float, int]:
    """BenchThroughputLatency once: (entries/s, p50 ms, p99 ms, completions); ``properties``: more client keys;
    ``client_warmup``: the tool's own warm-up (10000 adds from a first client, not measured) instead of none."""
    latency_file = workdir / "latency.dat"
    args = ["-zookeeper", cluster.chroot_connect, "-ensemble", str(ens[0]), "-quorum", str(ens[1]),
            "-ackQuorum", str(ens[2]), "-entrysize", str(size), "-throttle", str(throttle), "-ledgers", str(LEDGERS),
            "-time", str(seconds), "-sendlimit", "3000000", "-latencyFile", str(latency_file),
            "-timeout", str(seconds + 90)]
    if not client_warmup:
        args.append("-skipwarmup")
    if v2:
        args.append("-useV2")
    text = java_tool(BTL, *args, limit_s=seconds + 120, properties=properties)
    ops, completions = btl_result(text, seconds)
    lat = [int(line.split("\t", 1)[0]) / 1e6 for line in latency_file.read_text().splitlines() if line]
    latency_file.unlink()
    return ops, percentile(lat, 50), percentile(lat, 99), completions


def btl_result(text: str, seconds: int) -> tuple[int, int]:
    """BenchThroughputLatency's (adds/s, completions) from its output; an error with the end of its output when
    it printed no result or completed no add: the tool's own log says why (a ledger it could not create, adds
    answered with an error), which a point of zero throughput would hide."""
    done = re.search(r"(\d+) completions in (\d+) milliseconds: (\d+) ops/sec", text)
    if not done:
        raise RuntimeError(f"BenchThroughputLatency printed no result:\n{text[-3000:]}")
    if int(done.group(1)) == 0:
        raise RuntimeError(f"BenchThroughputLatency completed no add in {seconds}s:\n{text[-3000:]}")
    return int(done.group(3)), int(done.group(1))


# BenchReadThroughputLatency's -batchentries default: it reads a ledger in batches of this many entries.
BRTL_BATCH = 1000


def brtl_entries(wanted: int, batch: int = BRTL_BATCH) -> int:
    """The largest ledger length <= ``wanted`` that BenchReadThroughputLatency 4.17.3 reads to the end and stops.

    Its batch loop starts each batch at the last entry already read (``batchReadEntries(lastRead, batch)``) and
    stops once it has *counted* more entries than the LAC: after k full batches it has counted k*batch entries
    but reached only entry k*(batch-1). When k*(batch-1) < LAC < k*batch the loop ends short of the LAC, and the
    tool then re-opens the ledger every second forever, waiting for its last entry read to equal the LAC (a
    5000-entry ledger, LAC 4999, is such a length; it hangs the same way on Apache BookKeeper's bookies). Fixed
    upstream after 4.17 (apache/bookkeeper#4220, "Fix BenchReadThroughputLatency batch read can't stop")."""
    entries = wanted
    while any((batch - 1) * k < entries - 1 < batch * k for k in range(1, entries // (batch - 1) + 2)):
        entries -= 1
    return entries


def run_brtl(cluster: Cluster, ledger_id: int) -> tuple[float, int]:
    """BenchReadThroughputLatency on one closed ledger (of a length from ``brtl_entries``): (entries/s over its
    read time, entries it read; the batch loop reads each batch's first entry twice, so a few more than the
    ledger holds).

    The tool re-opens the ledger until its LAC has not moved for 10 polls of 1 s, and counts only the time
    spent reading, so the idle tail does not dilute the rate."""
    if not 0 < ledger_id < 2**31:
        # It parses -ledger with Integer.parseInt, and takes 0 for "no ledger given" (it then waits for new
        # ledgers to appear instead of reading).
        raise ValueError(f"BenchReadThroughputLatency cannot read ledger {ledger_id}")
    text = java_tool(BRTL, "-zookeeper", cluster.chroot_connect, "-ledger", str(ledger_id), "-password",
                     PASSWORD, "-ledgerManagerType", "hierarchical", limit_s=90)
    reads = re.findall(r"Read (\d+) in (\d+)ms", text)
    if not reads:
        raise RuntimeError(f"BenchReadThroughputLatency printed no result:\n{text[-3000:]}")
    entries, ms = int(reads[-1][0]), max(1, int(reads[-1][1]))
    return entries * 1000 / ms, entries


# ----------------------------------------------------------------------------------------------- our client

def _client(cluster: Cluster, v2: bool = False, tls: Any = None) -> Any:
    """Our client on ``cluster``; ``tls``: a ``bookie.tls.ClientTLS`` (START_TLS on every connection)."""
    from bookie.client.bookkeeper import BookKeeper
    from bookie.client.config import ClientConfig

    return BookKeeper(ClientConfig(zk_servers=cluster.zk_connect, ledgers_root=cluster.root, use_v2_protocol=v2,
                                   speculative_read_timeout_s=0, tls=tls))


WRITABLE_WITHIN_S = 120.0


def until_writable(cluster: Cluster, within_s: float = WRITABLE_WITHIN_S) -> float:
    """Wait until clients see every bookie of ``cluster`` registered writable; the seconds it took. On a loaded
    machine a bookie can be out of the writable set for a while (its ZooKeeper session expired and it registers
    again; a restart not yet registered: Apache BookKeeper's readiness answers before its registration), and a
    point started then measures a smaller cluster, or creates no ledger at all. A wait is printed: it says the
    machine was too loaded for the cluster to stay whole."""
    waited = asyncio.run(_until_writable(cluster, within_s))
    if waited > 1:
        print(f"waited {waited:.1f} s for every {cluster.impl} bookie to be writable again "
              f"(load {load_average():.1f})", flush=True)
    return waited


async def _until_writable(cluster: Cluster, within_s: float) -> float:
    wanted = {b.bookie_id for b in cluster.bookies}
    started = time.monotonic()
    async with _client(cluster) as bk:
        missing = wanted - set(await bk.writable_bookies())
        while missing and time.monotonic() - started < within_s:
            await asyncio.sleep(0.2)
            missing = wanted - set(await bk.writable_bookies())
        if missing:
            read_only = set(await bk.readonly_bookies())
    if missing:
        accounts = [missing_bookie_account(b, b.bookie_id in read_only)
                    for b in cluster.bookies if b.bookie_id in missing]
        raise RuntimeError(f"{cluster.impl}: {', '.join(sorted(missing))} not registered writable within "
                           f"{within_s:.0f} s (load {load_average():.1f}, {_meminfo('MemAvailable') / 2**30:.1f} "
                           f"GiB of memory available, {kernel_oom_kills()} processes killed by the kernel's OOM "
                           f"killer since boot)\n" + "\n".join(accounts))
    return time.monotonic() - started


def missing_bookie_account(bookie: Any, read_only: bool) -> str:
    """Why a bookie may be out of the writable set, in words: its process ended (how), it is registered
    read-only, or it runs unregistered (its ZooKeeper session lost and not registered again); with its log's end."""
    from bookie_fleet.processes import log_tail

    if not bookie.running:
        state = exit_account(bookie.proc.returncode if bookie.proc else None)
    elif read_only:
        state = f"is running, registered read-only ({disk_account(bookie.ledger_dir)})"
    else:
        state = "is running, not registered at all"
    return f"bookie {bookie.bookie_id} {state}; its log ends:\n{log_tail(bookie.log_path, 40)}"


def disk_account(path: Path) -> str:
    """How full the disk under ``path`` is as a bookie's disk checker sees it (1 - usable / total), next to the
    ``diskUsageThreshold`` above which a bookie goes read-only (ours by default; Apache BookKeeper's default is the
    same, and the suite keeps both): a benchmark's data (its journals and entry logs) and whatever else the disk
    holds can fill it part-way through the run."""
    from bookie.config import BookieConfig

    threshold = BookieConfig.model_fields["disk_usage_threshold"].default
    usage = shutil.disk_usage(path)
    used = 1 - usage.free / usage.total
    verdict = "over" if used > threshold else "under"
    return (f"its ledger disk {used:.1%} used, {usage.free / 2**30:.1f} GiB free of {usage.total / 2**30:.1f}: "
            f"{verdict} the {threshold:.0%} at which a bookie goes read-only")


def kernel_oom_kills() -> int:
    """Processes the kernel's OOM killer has killed since boot (``oom_kill`` in /proc/vmstat)."""
    for line in Path("/proc/vmstat").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill":
            return int(value)
    return 0


async def _delete_all_ledgers(cluster: Cluster) -> int:
    async with _client(cluster) as bk:
        ledgers = await bk.list_ledgers()
        for ledger_id in ledgers:
            await bk.delete_ledger(ledger_id)
    return len(ledgers)


def reclaim(cluster: Cluster) -> None:
    """Between points: delete every ledger of the cluster and have each bookie collect it (forced GC over
    REST). Without this the suite keeps every entry it wrote, tens of GB per implementation over three
    rounds, and a bookie that fills its disk goes read-only in the middle of a run. Outside the measured
    points: neither the deletions nor the GC count in a point's time or CPU."""
    from gc_bench import forced_gc

    asyncio.run(_delete_all_ledgers(cluster))
    for bookie in cluster.bookies:
        forced_gc(bookie)


async def py_adds(cluster: Cluster, size: int, ens: tuple[int, int, int], seconds: float,
                  window: int, tls: Any = None) -> tuple[float, float, float, int]:
    """Our Python client: ``window`` outstanding ``LedgerHandle.append`` on one ledger for ``seconds``."""
    from bookie.protocol.entry import DigestType

    payload = b"x" * size
    async with _client(cluster, tls=tls) as bk:
        lh = await bk.create_ledger(*ens, digest_type=DigestType.CRC32, password=PASSWORD.encode())
        appends = AppendWindow(window)
        stop_at = time.monotonic() + seconds
        started_at = time.monotonic()
        while time.monotonic() < stop_at:
            await appends.append(lh, payload)
        await appends.drain()
        elapsed = time.monotonic() - started_at
        await lh.close()
    latencies = sorted(appends.latencies)
    return (len(latencies) / elapsed, 1000 * percentile(latencies, 50), 1000 * percentile(latencies, 99),
            len(latencies))


async def py_write_ledger(cluster: Cluster, entries: int, size: int) -> int:
    """A closed 3/2/2 ledger of ``entries`` entries (CRC32, BookKeeper's benchmark password)."""
    from bookie.protocol.entry import DigestType

    payload = b"r" * size
    async with _client(cluster) as bk:
        lh = await bk.create_ledger(3, 2, 2, digest_type=DigestType.CRC32, password=PASSWORD.encode())
        futures = []
        for _ in range(entries):
            futures.append(lh.append(payload))
            if len(futures) >= 500:
                await asyncio.gather(*futures)
                futures = []
        await asyncio.gather(*futures)
        await lh.close()
        return int(lh.ledger_id)


async def py_catchup(cluster: Cluster, ledger_id: int, batch: int = 100) -> tuple[float, float, float, int]:
    """Our client reads a closed ledger from the start, ``batch`` entries at a time: (entries/s, p50, p99 per
    batch in ms, entries)."""
    async with _client(cluster) as bk:
        lh = await bk.open_ledger(ledger_id, PASSWORD.encode(), recovery=False)
        last = lh.last_add_confirmed
        times: list[float] = []
        started = time.perf_counter()
        for first in range(0, last + 1, batch):
            t = time.perf_counter()
            await lh.read(first, min(last, first + batch - 1))
            times.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - started
    times.sort()
    return (last + 1) / elapsed, 1000 * percentile(times, 50), 1000 * percentile(times, 99), last + 1


async def py_tail(cluster: Cluster, rate: int, seconds: float, size: int) -> tuple[float, float, float, int]:
    """A writer adds at ``rate``/s; a second client tails with long-poll reads. Latency: append -> read."""
    from bookie.protocol.entry import DigestType

    payload = b"t" * size
    sent: dict[int, float] = {}
    lat: list[float] = []
    async with _client(cluster) as writer_bk, _client(cluster) as reader_bk:
        lh = await writer_bk.create_ledger(3, 2, 2, digest_type=DigestType.CRC32, password=PASSWORD.encode())
        reader = await reader_bk.open_ledger(lh.ledger_id, PASSWORD.encode(), recovery=False)
        total = int(rate * seconds)
        reader_done = asyncio.Event()

        async def write() -> None:
            # The writer goes on until the reader has its ``total`` entries: readers learn that an entry is
            # confirmed only from the LAC that later adds carry to the bookies (closing the ledger updates
            # ZooKeeper, not the bookies), and at 1000/s an add is sent before the previous ones are acknowledged,
            # so a writer stopping at ``total`` leaves the bookies' LAC a few entries short and the reader's long
            # polls waiting for ever.
            started = time.perf_counter()
            i = 0
            while not reader_done.is_set():
                # sleep(0) when behind schedule still lets the reader run
                await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
                sent[i] = time.perf_counter()
                lh.append(payload)
                i += 1
            await lh.close()

        async def tail() -> None:
            next_id = 0
            while next_id < total:
                if next_id <= reader.last_add_confirmed:
                    # Behind the LAC: take every confirmed entry (up to 100) in one parallel read, as a tailing
                    # reader that catches up does, instead of one round trip per entry.
                    last = min(reader.last_add_confirmed, next_id + 99, total - 1)
                    await reader.read(next_id, last)
                    now = time.perf_counter()
                    lat.extend(now - sent[i] for i in range(next_id, last + 1))
                    next_id = last + 1
                    continue
                _, entry = await reader.read_lac_and_entry(next_id, 1000)
                if entry is not None:
                    lat.append(time.perf_counter() - sent[next_id])
                    next_id += 1
            reader_done.set()

        started = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(write(), tail()), seconds + 60)
        elapsed = time.perf_counter() - started
    lat.sort()
    return len(lat) / elapsed, 1000 * percentile(lat, 50), 1000 * percentile(lat, 99), len(lat)


# ----------------------------------------------------------------------------------------------- compaction

# The same GC configuration on both implementations, so that the comparison is of the compactors and not of their
# defaults. Entry-log size comes from the settings (--gc-log-mib).
GC_CONF: dict[str, Any] = {
    "majorCompactionThreshold": 0.8, "minorCompactionThreshold": 0.2,  # BookKeeper's defaults (ours too)
    "majorCompactionInterval": 86400, "minorCompactionInterval": 3600,
    "gcWaitTime": 600000,  # no scheduled cycle within a point: only the forced one is measured
    "forceAllowCompaction": True,
    # BookKeeper's default compactor (EntryLogCompactor: live entries appended to the current entry log);
    # ours defaults to the transactional one, so it is set here for both.
    "useTransactionalCompaction": False,
    # Throttle off on both (BookKeeper reads the rates as ints, hence 2^31 - 1 rather than "unlimited").
    "isThrottleByBytes": True, "compactionRateByBytes": 2**31 - 1, "compactionRateByEntries": 2**31 - 1,
    "compactionMaxOutstandingRequests": 100000,
    "flushInterval": 60000,  # BookKeeper's default checkpoint interval, set on ours (10 s by default) too
    "journalSyncData": True, "journalMaxGroupWaitMSec": 1,  # as the add workloads' clusters
}
# Two knobs of ours that BookKeeper lacks, set to what BookKeeper does: compaction's reads are not rate-limited
# (ours: 100 MB/s by default) and compacted logs are deleted without a pause between them (ours: 100 ms).
GC_CONF_OURS = {"compactionReadRateByBytes": 0, "gcEntryLogDeletionPauseMs": 0, "autoRecoveryDaemonEnabled": False}
GC_LOAD_ENTRY = 1024


@dataclass
class GcStore:
    """The compaction workload's bookie of one implementation (a fresh one each round) and what it holds."""

    impl: str
    bookie: Any  # bookie_fleet's LocalBookie or JavaBookie (both have http_url and ledger_dir)
    client_conf: Any  # bookie.client.ClientConfig for its own ledgers root
    live: list[int] = field(default_factory=list)
    dead: list[int] = field(default_factory=list)
    prepared: dict[Path, int] = field(default_factory=dict)  # the entry logs written, and their sizes

    @property
    def pids(self) -> list[int]:
        return [self.bookie.proc.pid] if self.bookie.proc is not None else []


def start_gc_stores(workdir: Path, zk_connect: str, r: int, log_mib: int, stores: dict[str, GcStore], *,
                    peer: Peer) -> None:
    """One bookie per implementation with GC_CONF, each alone under its own ledgers root, started in parallel;
    ``stores`` is filled before they start, so that a failure still stops what runs."""
    from bookie.client import ClientConfig
    from bookie_fleet.java_bookies import plan_java_bookies
    from bookie_fleet.local_bookies import plan_bookies

    conf = {**GC_CONF, "logSizeLimit": log_mib * 1024 * 1024}
    for impl in IMPLS:
        root = f"/gc-{impl}-{r}/ledgers"
        asyncio.run(_init_cluster(zk_connect, root))
        bookie: Any
        if impl == "java":
            (bookie,) = plan_java_bookies(1, workdir / "java", zk_connect, root, first_host=241, http=True,
                                          production=True, lib_dir=peer.lib, ledgerStorageClass=DB_LEDGER_STORAGE,
                                          **conf)
        else:
            (bookie,) = plan_bookies(1, workdir / "ours", zk_connect, root, first_host=231,
                                     admin_token=secrets.token_urlsafe(32), **conf, **GC_CONF_OURS)
        stores[impl] = GcStore(impl, bookie, ClientConfig(zk_servers=zk_connect, ledgers_root=root))
    _start_gc_bookies(list(stores.values()))


def _start_gc_bookies(stores: list[GcStore]) -> None:
    from gc_bench import rest

    for st in stores:
        st.bookie.start(wait=False)
    for st in stores:
        st.bookie.wait_ready(120)
        # BookKeeper registers the bookie before its HTTP server is up; the workload needs the REST API.
        deadline = time.monotonic() + 60
        while True:
            try:
                rest(st.bookie, "GET", "/api/v1/bookie/gc")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def prepare_gc_stores(stores: dict[str, GcStore], mib: int, garbage: float) -> None:
    """Write ``mib`` MiB of 1 MiB ledgers to each store, one in 1/(1-garbage) kept live and interleaved with the
    others (gc_bench.write_mixed), then restart the bookies: shutting down flushes every entry and the new
    process writes to a new entry log, so every log written here is finalized and a candidate for compaction.
    The dead ledgers are deleted later, by the point itself."""
    from gc_bench import write_mixed

    for st in stores.values():
        st.live, st.dead = asyncio.run(write_mixed(st.client_conf, mib, 1 - garbage))
    for st in stores.values():
        st.bookie.stop()
        st.prepared = {path: path.stat().st_size for path in (st.bookie.ledger_dir / "current").glob("*.log")}
    _start_gc_bookies(list(stores.values()))


def stop_gc_stores(stores: dict[str, GcStore]) -> None:
    for st in stores.values():
        with contextlib.suppress(Exception):
            st.bookie.stop()
        shutil.rmtree(st.bookie.data_dir, ignore_errors=True)


async def paced_adds(lh: Any, rate: float, until: asyncio.Future[Any]) -> list[float]:
    """Adds of GC_LOAD_ENTRY bytes at ``rate``/s until ``until`` is done, on schedule whatever their latency
    (open loop, so a slow bookie shows as latency, not as fewer adds); their latencies in ms, sorted."""
    payload = b"c" * GC_LOAD_ENTRY
    latencies: list[float] = []
    futures: list[asyncio.Future[int]] = []
    started = time.perf_counter()
    while not until.done():
        delay = started + len(futures) / rate - time.perf_counter()
        if delay > 0:
            await asyncio.wait({until}, timeout=delay)  # the next slot, or the end
            if until.done():
                break
        sent = time.perf_counter()
        fut = lh.append(payload)
        fut.add_done_callback(partial(_add_done, latencies, sent))
        futures.append(fut)
    await asyncio.gather(*futures)  # a failed add fails the point
    return sorted(latencies)


def _add_done(latencies: list[float], sent: float, fut: asyncio.Future[int]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        latencies.append(1000 * (time.perf_counter() - sent))


def _existing(paths: list[Path]) -> list[Path]:
    return [path for path in paths if path.exists()]


async def compaction_point(st: GcStore, rate: float, baseline_s: float, grace_s: float) -> dict[str, float]:
    """One forced major compaction of a prepared store, under a light add load.

    The load runs ``baseline_s`` first (p99 without compaction), then the dead ledgers are deleted and the same
    load runs from the forced GC request until the bookie reports the forced cycle over (GET /api/v1/bookie/gc,
    the flag both implementations clear when the cycle ends). Reclaim time: from the request until the last
    prepared entry log is gone from disk (at most ``grace_s`` after the cycle ends, else NaN)."""
    from bookie.client import BookKeeper
    from gc_bench import ENTRY, PER_LEDGER, delete, forced_gc, rest

    def last_major_ms() -> int:
        # lastMajorCompactionTime rather than majorCompactionCounter: BookKeeper's counter stays 0 without a
        # stats provider, its timestamp is set whenever a major compaction ends.
        details = rest(st.bookie, "GET", "/api/v1/bookie/gc_details")
        return max(int(d.get("lastMajorCompactionTime", 0)) for d in details)

    async with BookKeeper(st.client_conf) as bk:
        lh = await bk.create_ledger(1, 1, 1, password=PASSWORD.encode())
        quiet = await paced_adds(lh, rate, asyncio.ensure_future(asyncio.sleep(baseline_s)))
        await delete(st.client_conf, st.dead)
        major_before = await asyncio.to_thread(last_major_ms)
        prepared = list(st.prepared)
        load, cpu_before = load_average(), cpu_seconds(st.pids)
        started = time.monotonic()
        cycle: asyncio.Future[float] = asyncio.ensure_future(
            asyncio.to_thread(forced_gc, st.bookie, {"forceMajor": True}))

        async def reclaimed() -> float:
            ended_at: float | None = None
            while await asyncio.to_thread(_existing, prepared):
                if cycle.done():
                    ended_at = ended_at or time.monotonic()
                    if time.monotonic() - ended_at > grace_s:
                        return float("nan")
                await asyncio.sleep(0.02)
            return time.monotonic() - started

        reclaim = asyncio.ensure_future(reclaimed())
        during = await paced_adds(lh, rate, cycle)
        cycle_s = cycle.result()  # from the request to the forced flag seen cleared (polled every 50 ms)
        cpu = cpu_seconds(st.pids) - cpu_before
        reclaim_s = await reclaim
        if await asyncio.to_thread(last_major_ms) <= major_before:
            raise RuntimeError(f"{st.impl}: the forced GC ran no major compaction")
        await lh.close()
    left = sum(st.prepared[path] for path in await asyncio.to_thread(_existing, prepared))
    live_bytes = len(st.live) * PER_LEDGER * ENTRY
    return {"live_mb": live_bytes / 1e6, "cycle_s": cycle_s, "mb_s": live_bytes / 1e6 / cycle_s,
            "entries": len(st.live) * PER_LEDGER, "reclaim_s": reclaim_s,
            "prepared_mb": sum(st.prepared.values()) / 1e6, "freed_mb": (sum(st.prepared.values()) - left) / 1e6,
            "garbage": len(st.dead) / max(1, len(st.dead) + len(st.live)),
            "p50_ms": percentile(during, 50), "p99_ms": percentile(during, 99), "adds": len(during),
            "quiet_p50_ms": percentile(quiet, 50), "quiet_p99_ms": percentile(quiet, 99), "quiet_adds": len(quiet),
            "cpu_s": cpu, "load": load}


# ----------------------------------------------------------------------------------------------- the run

@dataclass
class Settings:
    rounds: int = 3
    seconds: int = 15  # per measured point: several times the length of a warm-up pass
    full_page_cache: bool = True  # every point starts with memory full of page cache (FullPageCache)
    warmup_seconds: int = 10  # per warm-up pass and protocol
    warmup_max: int = 8  # passes at most
    warmup_tolerance: float = 0.05  # a pass within 5% of the previous one ends the warm-up
    throttle: int = 1000
    sizes: tuple[int, ...] = (100, 1024, 16 * 1024)
    ensembles: tuple[tuple[int, int, int], ...] = ENSEMBLES
    protocols: tuple[str, ...] = ("v3", "v2")
    read_entries: int = 5000
    tail_rate: int = 1000
    py_window: int = 1000  # as many appends in flight as BenchThroughputLatency's -throttle keeps adds
    workloads: tuple[str, ...] = ("adds", "reads", "pyclient", "compaction")
    gc_mib: int = 256  # prepared store per implementation
    gc_garbage: float = 0.75  # share of its ledgers deleted before the forced compaction
    gc_log_mib: int = 64  # logSizeLimit of both implementations' compaction bookies
    gc_rate: int = 200  # light add load (1 KiB, 1/1/1) during and without compaction, adds/s
    gc_baseline_s: float = 5.0  # the load's run without compaction
    gc_grace_s: float = 30.0  # how long after the forced cycle the prepared logs may take to disappear
    profile: bool = False
    ours_config: dict[str, str] = field(default_factory=dict)  # our bookies' keys other than their defaults


def order_for(index: int) -> tuple[str, ...]:
    return IMPLS if index % 2 == 0 else tuple(reversed(IMPLS))


Measurement = tuple[float, float, float, int]  # ops/s, p50 ms, p99 ms, operations


def _sync(coro: Coroutine[Any, Any, Measurement]) -> Measurement:
    """A point of our client, on uvloop: the event loop our client's commands run it on."""
    import uvloop  # from the virtualenv, which ``prepare_interpreter`` enters

    return uvloop.run(coro)


def _brtl_point(cluster: Cluster, ledger_id: int) -> Measurement:
    rate, entries = run_brtl(cluster, ledger_id)
    return rate, float("nan"), float("nan"), entries


def report_exited_bookies(cluster: Cluster) -> None:
    """After a failed point: which bookies of the cluster are no longer running, with the end of their logs."""
    from bookie_fleet.processes import log_tail

    for b in cluster.bookies:
        if not b.running:
            print(f"bookie {b.bookie_id} ({cluster.impl}) {exit_account(b.proc.returncode if b.proc else None)}; "
                  f"its log ends:\n{log_tail(b.log_path, 40)}", flush=True)


def exit_account(returncode: int | None) -> str:
    """How a bookie process ended, in words: a negative code is the signal that killed it (SIGKILL with no one
    of ours sending it is the kernel's OOM killer: see ``dmesg``)."""
    if returncode is None:
        return "was never started"
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with {returncode}"


def measured(cluster: Cluster, fn: Callable[[], tuple[float, float, float, int]],
             page_cache: FullPageCache | None = None) -> tuple[float, float, float, int, float, float]:
    """One point: ``fn`` run once, with the cluster's bookie CPU per 100k entries and the load average before it;
    ``page_cache``: filled first (the suite's points; the single-question benches measure the state they set up)."""
    if page_cache is not None:
        page_cache.fill()
    until_writable(cluster)
    load = load_average()
    cpu_before = cpu_seconds(cluster.pids)
    try:
        ops, p50, p99, count = fn()
    except Exception as exc:  # one failed point (a tool that hangs, say) must not lose the whole run
        print(f"point failed on {cluster.impl}: {str(exc)[-1500:]}", flush=True)
        report_exited_bookies(cluster)
        nan = float("nan")
        return nan, nan, nan, 0, nan, load
    cpu = cpu_seconds(cluster.pids) - cpu_before
    return ops, p50, p99, count, cpu * 100000 / max(1, count), load


def run(settings: Settings, workdir: Path, log: Callable[[str], None], peer: Peer) -> dict[str, Any]:
    from bookie_fleet.zookeeper import ZooKeeperServer

    page_cache = FullPageCache(workdir)
    ballast = page_cache.create() if settings.full_page_cache else (0.0, 0.0)
    facts: dict[str, Any] = {
             "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
             "page_cache_ballast_gib": ballast[0], "page_cache_ballast_s": ballast[1],
             "load_before": load_average(), "fdatasync_per_s": fdatasync_rate(workdir, 3 if settings.rounds > 1
                                                                               else 0.5),
             "seq_write_mb_s": sequential_write_mb_s(workdir, 512 if settings.rounds > 1 else 16),
             "peer": peer.version}
    log(f"machine: {facts}")
    points: list[Point] = []
    zk = ZooKeeperServer(workdir / "zk").start()
    clusters: dict[str, Cluster] = {}
    try:
        clusters = start_clusters(workdir, zk.connect_string, 3, IMPLS, started=clusters, peer=peer,
                                  ours_config=settings.ours_config)
        if "java" in clusters:
            facts["java_bookie_jvm"] = jvm_options(clusters["java"].pids[0])
            facts["peer"] = running_release(clusters["java"].pids[0]) or peer.version
        step = 0

        def record(p: Point) -> None:
            points.append(p)
            extra = f" {json.dumps({k: round(v, 3) for k, v in p.extra.items()})}" if p.extra else ""
            log(f"r{p.round} {p.workload:<12} {p.impl:<4} {json.dumps(p.params)}: {p.ops_per_s:8.0f}/s "
                f"p50 {p.p50_ms:7.2f} p99 {p.p99_ms:7.2f} ms cpu/100k {p.cpu_s_per_100k:6.2f} s "
                f"load {p.load:.1f}{extra}")

        facts["warmup"] = {impl: warm_up(clusters[impl], settings, workdir, log) for impl in clusters}
        for r in range(settings.rounds):
            if "adds" in settings.workloads:
                for proto in settings.protocols:
                    for ens in settings.ensembles:
                        for size in settings.sizes:
                            for impl in order_for(step):
                                c = clusters[impl]
                                ops, p50, p99, n, cpu, load = measured(c, partial(
                                    run_btl, c, size, ens, proto == "v2", settings.seconds, settings.throttle,
                                    workdir), page_cache)
                                record(Point("btl", impl, r, {"size": size, "ens": "/".join(map(str, ens)),
                                                              "proto": proto}, ops, p50, p99, cpu, load, n))
                                reclaim(c)
                            step += 1
            if "pyclient" in settings.workloads:
                for ens in settings.ensembles:
                    for impl in order_for(step):
                        c = clusters[impl]
                        ops, p50, p99, n, cpu, load = measured(c, partial(
                            _sync, py_adds(c, 1024, ens, settings.seconds, settings.py_window)), page_cache)
                        record(Point("pyclient", impl, r, {"size": 1024, "ens": "/".join(map(str, ens)),
                                                           "proto": "v3"}, ops, p50, p99, cpu, load, n))
                        reclaim(c)
                    step += 1
            if "reads" in settings.workloads:
                for impl in order_for(step):
                    c = clusters[impl]
                    try:
                        ledger = asyncio.run(py_write_ledger(c, brtl_entries(settings.read_entries), 1024))
                    except Exception as exc:  # the read points fail below (no such ledger), the run goes on
                        print(f"read ledger not written on {impl}: {str(exc)[-1500:]}", flush=True)
                        report_exited_bookies(c)
                        ledger = -1
                    ops, p50, p99, n, cpu, load = measured(c, partial(_brtl_point, c, ledger), page_cache)
                    record(Point("catchup-java", impl, r, {"size": 1024, "ens": "3/2/2"}, ops, p50, p99, cpu,
                                 load, n))
                    ops, p50, p99, n, cpu, load = measured(c, partial(_sync, py_catchup(c, ledger)), page_cache)
                    record(Point("catchup-py", impl, r, {"size": 1024, "ens": "3/2/2"}, ops, p50, p99, cpu, load, n))
                    ops, p50, p99, n, cpu, load = measured(c, partial(
                        _sync, py_tail(c, settings.tail_rate, settings.seconds, 1024)), page_cache)
                    record(Point("tail-py", impl, r, {"size": 1024, "ens": "3/2/2", "rate": settings.tail_rate},
                                 ops, p50, p99, cpu, load, n))
                    reclaim(c)
                step += 1
            if "compaction" in settings.workloads:
                compaction_round(workdir / f"gc-{r}", zk.connect_string, r, order_for(step), settings, page_cache,
                                 record, peer)
                step += 1
        if settings.profile:
            facts["profile"] = profile_add_path(clusters["ours"], settings, workdir, log)
    except BaseException:
        for c in clusters.values():
            report_exited_bookies(c)
        raise
    finally:
        stop_clusters(clusters)
        zk.stop()
        page_cache.remove()
    facts["load_after"] = load_average()
    facts["free_gib_at_points"] = page_cache.free_at_points
    return {"facts": facts, "settings": asdict(settings), "points": [asdict(p) for p in points]}


def jvm_options(pid: int) -> list[str]:
    """The options a running JVM was started with (its command line up to the classpath)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return args[1:args.index("-cp")] if "-cp" in args else args[1:]


def warm_up(cluster: Cluster, settings: Settings, workdir: Path, log: Callable[[str], None]) -> list[list[float]]:
    """The headline point (1 KiB, 3/2/2), v3 then v2, again and again until neither throughput moved by more than
    ``warmup_tolerance`` since the previous pass (the JIT of a Java bookie, connections and caches of both);
    returns each pass's [v3, v2] adds/s."""
    passes: list[list[float]] = []
    for i in range(settings.warmup_max):
        ops = []
        for v2 in (False, True):
            until_writable(cluster)
            try:
                rate, _, _, _ = run_btl(cluster, 1024, (3, 2, 2), v2, settings.warmup_seconds, settings.throttle,
                                        workdir)
            except RuntimeError as exc:  # a cold JVM's first pass may complete nothing: what warming up is for
                log(f"warm-up {cluster.impl} pass {i + 1} ({'v2' if v2 else 'v3'}) measured nothing: "
                    f"{str(exc)[-1500:]}")
                report_exited_bookies(cluster)
                rate = 0
            reclaim(cluster)
            ops.append(float(rate))
        passes.append(ops)
        log(f"warm-up {cluster.impl} pass {i + 1}: v3 {ops[0]:.0f}/s, v2 {ops[1]:.0f}/s")
        if len(passes) >= 2 and all(abs(now - before) <= settings.warmup_tolerance * before
                                    for now, before in zip(passes[-1], passes[-2], strict=True)):
            break
    return passes


def compaction_round(workdir: Path, zk_connect: str, r: int, order: tuple[str, ...], settings: Settings,
                     page_cache: FullPageCache, record: Callable[[Point], None], peer: Peer) -> None:
    """Fresh compaction bookies, the same prepared store on each, then one compaction point per implementation
    in ``order``. A failure is logged and recorded as failed points (count 0) rather than losing the run."""
    params = {"mib": settings.gc_mib, "garbage": settings.gc_garbage, "log_mib": settings.gc_log_mib}
    stores: dict[str, GcStore] = {}
    done: set[str] = set()
    try:
        start_gc_stores(workdir, zk_connect, r, settings.gc_log_mib, stores, peer=peer)
        prepare_gc_stores(stores, settings.gc_mib, settings.gc_garbage)
        for impl in order:
            page_cache.fill()
            res = asyncio.run(compaction_point(stores[impl], settings.gc_rate, settings.gc_baseline_s,
                                               settings.gc_grace_s))
            done.add(impl)
            record(Point("compaction", impl, r, params, res["mb_s"], res["p50_ms"], res["p99_ms"],
                         res["cpu_s"] * 100000 / max(1, res["entries"]), res["load"], int(res["entries"]), res))
    except Exception as exc:
        print(f"compaction round {r} failed: {str(exc)[-1500:]}", flush=True)
        nan = float("nan")
        for impl in order:
            if impl not in done:
                record(Point("compaction", impl, r, params, nan, nan, nan, nan, load_average(), 0))
    finally:
        stop_gc_stores(stores)


def profile_add_path(cluster: Cluster, settings: Settings, workdir: Path, log: Callable[[str], None]) -> str:
    """py-spy flame graph of one of our bookies during BenchThroughputLatency, 1 KiB, 3/2/2, v3."""
    spy = py_spy()
    if spy is None:
        raise RuntimeError("py-spy is not installed (run with --profile so that the setup installs it)")
    PROFILES.mkdir(parents=True, exist_ok=True)
    out = PROFILES / "add-1k-322-v3.svg"
    seconds = max(settings.seconds, 8)
    proc = subprocess.Popen([spy, "record", "--pid", str(cluster.pids[0]), "--duration", str(seconds - 2),
                             "--rate", "250", "--threads", "--format", "flamegraph", "--output", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ops, _, p99, _ = run_btl(cluster, 1024, (3, 2, 2), False, seconds, settings.throttle, workdir)
    proc.communicate(timeout=60)
    log(f"profile: {out} ({ops:.0f} adds/s, p99 {p99:.1f} ms while sampling)")
    return str(out.relative_to(REPO))


# ----------------------------------------------------------------------------------------------- report

def medians(points: list[dict[str, Any]], workload: str, impl: str, params: dict[str, Any]) -> dict[str, float]:
    chosen = [p for p in points if p["workload"] == workload and p["impl"] == impl and p["count"] > 0
              and all(p["params"].get(k) == v for k, v in params.items())]
    if not chosen:
        return {}
    keys = ["ops_per_s", "p50_ms", "p99_ms", "cpu_s_per_100k", "load"]
    keys += sorted({k for p in chosen for k in p.get("extra", {})} - set(keys))

    def median(key: str) -> float:
        values = [v for p in chosen if (v := p[key] if key in p else p.get("extra", {}).get(key)) is not None
                  and v == v]  # NaN (a value the point could not measure) left out
        return statistics.median(values) if values else float("nan")

    return {k: median(k) for k in keys}


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b or a != a or b != b:
        return "-"
    return f"{a / b:.2f}x"


def _num(v: float | None, fmt: str = ".0f") -> str:
    return "-" if v is None or v != v else format(v, fmt)


def page_cache_fact(facts: dict[str, Any]) -> str:
    free = sorted(facts.get("free_gib_at_points") or [])
    if not facts.get("page_cache_ballast_gib") or not free:
        return "Points started with whatever memory was free (no page cache fill)."
    return (f"Every point started with memory full of page cache, as on a bookie's machine that has been running "
            f"(`FullPageCache`: a {facts['page_cache_ballast_gib']:.1f} GiB ballast read back before each point; "
            f"free memory at the start of a point {free[0]:.1f}-{free[-1]:.1f} GiB, median "
            f"{statistics.median(free):.1f}).")


def report(results: dict[str, Any], command: str) -> str:
    facts, s, pts = results["facts"], results["settings"], results["points"]
    peer = facts.get("peer", EARLIER_RUNS_PEER)
    lines = [BEGIN, f"## Suite: our bookie vs Apache BookKeeper {peer}, BookKeeper's own benchmark tools", "",
             f"Command: `{command}`  ",
             f"Machine: {facts['cores']} cores, {facts['platform']}, Python {facts['python']}. Measured in the same "
             f"run: disk fdatasync **{facts['fdatasync_per_s']:.0f}/s** (4 KiB writes), sequential write "
             f"**{facts['seq_write_mb_s']:.0f} MB/s** (1 MiB writes + fdatasync). Load average (1 min) "
             f"{facts['load_before']:.1f} before, {facts['load_after']:.1f} after; each row gives the median load "
             f"during its points. {page_cache_fact(facts)}  ",
             f"Clusters: 3 bookies per implementation on this machine (separate data directories, same disk), "
             f"journal fsync on, 1 ms group wait; Apache BookKeeper {peer} with DbLedgerStorage, driven by "
             f"BookKeeper's benchmark tools of 4.17.3 (the newest `bookkeeper-benchmark` published) for both "
             f"implementations. {s['rounds']} rounds, "
             f"each point alternating which implementation goes first; medians over the rounds.  ",
             *production_settings(s.get("ours_config") or {}), "", *jvm_as_run(facts),
             *warm_up_report(facts, s, pts), ""]
    if any(p["workload"] == "btl" for p in pts):
        lines += ["### Adds: BenchThroughputLatency (Java client)", "",
                  f"`BenchThroughputLatency -throttle {s['throttle']} -ledgers {LEDGERS} -time {s['seconds']}` "
                  f"(at most {s['throttle']} outstanding adds; each of the {LEDGERS} ledger handles is also "
                  f"rate-limited to {s['throttle']}/s by the client's throttleValue), latencies from its dump. "
                  "CPU: bookie processes' utime + stime per 100k entries acknowledged to the client "
                  "(all bookies of the cluster).", "",
                  "| proto | E/W/A | entry | ours adds/s | Java adds/s | ratio | ours p50 ms | Java p50 ms | "
                  "ours p99 ms | Java p99 ms | p99 ratio | ours CPU s/100k | Java CPU s/100k | load |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for proto in s["protocols"]:
            for ens in s["ensembles"]:
                for size in s["sizes"]:
                    key = {"size": size, "ens": "/".join(map(str, ens)), "proto": proto}
                    o, j = medians(pts, "btl", "ours", key), medians(pts, "btl", "java", key)
                    if not o or not j:
                        continue
                    lines.append(
                        f"| {proto} | {key['ens']} | {size} B | {_num(o['ops_per_s'])} | {_num(j['ops_per_s'])} | "
                        f"{_ratio(o['ops_per_s'], j['ops_per_s'])} | {_num(o['p50_ms'], '.1f')} | "
                        f"{_num(j['p50_ms'], '.1f')} | {_num(o['p99_ms'], '.1f')} | {_num(j['p99_ms'], '.1f')} | "
                        f"{_ratio(o['p99_ms'], j['p99_ms'])} | {_num(o['cpu_s_per_100k'], '.1f')} | "
                        f"{_num(j['cpu_s_per_100k'], '.1f')} | {_num((o['load'] + j['load']) / 2, '.1f')} |")
        lines += ["", "Throughput ratio > 1: ours faster. p99 ratio < 1: ours lower (better).", ""]
    if any(p["workload"] == "pyclient" for p in pts):
        lines += ["### Adds from our Python client (`LedgerHandle.append`), next to the Java client", "",
                  f"{s['py_window']} outstanding appends on one ledger, 1 KiB entries, v3, our client on uvloop (as "
                  "our client's commands run it). The Java client column is BenchThroughputLatency's at the same point "
                  "(table above).", "",
                  "| E/W/A | bookies | Python client adds/s | p50 ms | p99 ms | Java client adds/s | Java p99 ms | "
                  "Python/Java client |", "|---|---|---|---|---|---|---|---|"]
        for ens in s["ensembles"]:
            e = "/".join(map(str, ens))
            for impl in ("ours", "java"):
                py = medians(pts, "pyclient", impl, {"ens": e})
                jc = medians(pts, "btl", impl, {"ens": e, "size": 1024, "proto": "v3"})
                if not py:
                    continue
                lines.append(f"| {e} | {impl} | {_num(py['ops_per_s'])} | {_num(py['p50_ms'], '.1f')} | "
                             f"{_num(py['p99_ms'], '.1f')} | {_num(jc.get('ops_per_s'))} | "
                             f"{_num(jc.get('p99_ms'), '.1f')} | {_ratio(py['ops_per_s'], jc.get('ops_per_s'))} |")
        lines.append("")
    if any(p["workload"].startswith(("catchup", "tail")) for p in pts):
        lines += ["### Reads", "",
                  f"Catch-up: a closed 3/2/2 ledger of {brtl_entries(s['read_entries'])} entries of 1 KiB read "
                  "from the start (a length BenchReadThroughputLatency 4.17.3 stops on, see `brtl_entries`), "
                  "by `BenchReadThroughputLatency -ledger` (Java client; its rate counts only its reading time) "
                  "and by our client (100 entries per `read`; p50/p99 per batch). Tailing: our client following "
                  f"a writer that adds at {s['tail_rate']} entries/s until the reader has {s['seconds']} s worth: "
                  "long-poll `read_lac_and_entry` when caught up, one `read` of every confirmed entry (up to 100) "
                  "when behind; latency from append to the reader having the entry (an entry becomes readable once "
                  "a later add has carried its LAC to the bookies).", "",
                  "| reading | ours entries/s | Java entries/s | ratio | ours p50 ms | Java p50 ms | ours p99 ms | "
                  "Java p99 ms | ours CPU s/100k | Java CPU s/100k |", "|---|---|---|---|---|---|---|---|---|---|"]
        names = {"catchup-java": "catch-up, BenchReadThroughputLatency", "catchup-py": "catch-up, our client",
                 "tail-py": "tailing, our client"}
        for w, name in names.items():
            o, j = medians(pts, w, "ours", {}), medians(pts, w, "java", {})
            if not o or not j:
                continue
            lines.append(f"| {name} | {_num(o['ops_per_s'])} | {_num(j['ops_per_s'])} | "
                         f"{_ratio(o['ops_per_s'], j['ops_per_s'])} | {_num(o['p50_ms'], '.1f')} | "
                         f"{_num(j['p50_ms'], '.1f')} | {_num(o['p99_ms'], '.1f')} | {_num(j['p99_ms'], '.1f')} | "
                         f"{_num(o['cpu_s_per_100k'], '.1f')} | {_num(j['cpu_s_per_100k'], '.1f')} |")
        lines.append("")
    if any(p["workload"] == "compaction" for p in pts):
        lines += compaction_report(pts, s)
    lines.append(END)
    return "\n".join(lines)


def production_settings(ours_config: dict[str, str]) -> list[str]:
    from bookie_fleet.java_bookies import PRODUCTION_JVM_OPTS

    ours = ("`bookie serve` as the image runs it (uvloop, default cache sizes)" if not ours_config else
            "`bookie serve` as the image runs it (uvloop), NOT at its defaults: "
            + ", ".join(f"`{k}={v}`" for k, v in sorted(ours_config.items())))
    return ["Both implementations run at their production settings. Apache BookKeeper's bookies: the JVM that its "
            f"`bin/bookkeeper` gives a bookie on Java 17 (`{' '.join(PRODUCTION_JVM_OPTS)}`; G1, full tiered "
            "compilation; this machine's memory holds the 1 GB heap and 2 GB of direct memory of every bookie) "
            "and BookKeeper's defaults for everything the run does not set (DbLedgerStorage's caches at a quarter "
            "of direct memory each, its thread pools). The test suite's fast-start JVM (C1 only, serial GC, "
            f"256 MB) is not used here. Ours: {ours}. "
            f"The benchmark client JVM: BookKeeper's CLI settings (`{' '.join(CLIENT_JVM)}`)."]


def jvm_as_run(facts: dict[str, Any]) -> list[str]:
    jvm = [o for o in facts.get("java_bookie_jvm", []) if not o.startswith("-Dlog4j2")]
    return [f"JVM options of a running Apache BookKeeper bookie in this run: `{' '.join(jvm)}`", ""] if jvm else []


def warm_up_report(facts: dict[str, Any], s: dict[str, Any], pts: list[dict[str, Any]]) -> list[str]:
    """The warm-up passes of each implementation next to the round-to-round noise of the measured points."""
    warm = facts.get("warmup") or {}
    if not warm:
        return []
    lines = [f"Warm-up before any measured point: passes of BenchThroughputLatency at 1 KiB 3/2/2, v3 then v2, "
             f"{s['warmup_seconds']} s each, until a pass is within {s['warmup_tolerance']:.0%} of the previous "
             f"one on both protocols (at most {s['warmup_max']} passes); measured points last {s['seconds']} s.", "",
             "| implementation | warm-up passes, v3 adds/s | v2 adds/s | last pass vs the one before |",
             "|---|---|---|---|"]
    for impl, passes in warm.items():
        change = (max(abs(a - b) / b for a, b in zip(passes[-1], passes[-2], strict=True) if b)
                  if len(passes) >= 2 else float("nan"))
        lines.append(f"| {impl} | {', '.join(_num(p[0]) for p in passes)} | {', '.join(_num(p[1]) for p in passes)} "
                     f"| {_num(change * 100, '.1f')}% |")
    noise = round_noise(pts)
    lines += ["", f"Round-to-round noise of the measured add points (spread of a point's rounds over its median, "
              f"median over points): ours {_num(noise.get('ours', float('nan')) * 100, '.1f')}%, Java "
              f"{_num(noise.get('java', float('nan')) * 100, '.1f')}%. A last warm-up pass that moved less than "
              "this changed the result by less than the noise."]
    return lines


def round_noise(pts: list[dict[str, Any]]) -> dict[str, float]:
    by_point: dict[tuple[str, str], list[float]] = {}
    for p in pts:
        if p["workload"] == "btl" and p["count"] > 0:
            by_point.setdefault((p["impl"], json.dumps(p["params"], sort_keys=True)), []).append(p["ops_per_s"])
    spreads: dict[str, list[float]] = {}
    for (impl, _), values in by_point.items():
        if len(values) >= 2 and statistics.median(values) > 0:
            spreads.setdefault(impl, []).append((max(values) - min(values)) / statistics.median(values))
    return {impl: statistics.median(v) for impl, v in spreads.items()}


def compaction_report(pts: list[dict[str, Any]], s: dict[str, Any]) -> list[str]:
    o, j = medians(pts, "compaction", "ours", {}), medians(pts, "compaction", "java", {})
    keep = round(1 / (1 - s["gc_garbage"]))
    lines = ["### Compaction: a forced major compaction of the same prepared store", "",
             f"One bookie per implementation, fresh each round. Our client writes {s['gc_mib']} MiB to it as 1 MiB "
             f"ledgers (64 entries of 16 KiB, 1/1/1), one ledger in {keep} to keep and the others to delete "
             f"({s['gc_garbage']:.0%} garbage), interleaved so every entry log mixes both; the bookie is restarted "
             "(every entry flushed, every log written finalized), the dead ledgers are deleted, then "
             "`PUT /api/v1/bookie/gc {\"forceMajor\": true}` and `GET /api/v1/bookie/gc` every 50 ms until the "
             "forced cycle is over. Meanwhile our client adds 1 KiB entries to a 1/1/1 ledger on the same bookie "
             f"at {s['gc_rate']}/s (open loop); the same load for {s['gc_baseline_s']:g} s before the deletions "
             "gives the latency without compaction. Same GC settings on both: "
             f"logSizeLimit {s['gc_log_mib']} MiB, majorCompactionThreshold 0.8, minorCompactionThreshold 0.2, "
             "useTransactionalCompaction=false (BookKeeper's compactor: live entries appended to the current entry "
             "log), throttle off (isThrottleByBytes, compactionRateByBytes 2^31-1), gcWaitTime 600 s (no scheduled "
             "cycle), flushInterval 60 s, journal fsync on; ours also compactionReadRateByBytes=0 and "
             "gcEntryLogDeletionPauseMs=0 (BookKeeper has neither a read throttle nor a pause between deletions). "
             "Apache BookKeeper with DbLedgerStorage.", "",
             "| measurement | ours | Java | ours/Java |", "|---|---|---|---|"]
    if not o or not j:
        return [*lines, "| (no successful point on both) | - | - | - |", ""]
    rows = [("live data rewritten per second of the forced cycle, MB/s", "ops_per_s", ".1f"),
            ("forced cycle: request to the forced flag cleared, s", "cycle_s", ".2f"),
            ("time to reclaim: request to the last prepared entry log deleted, s", "reclaim_s", ".2f"),
            ("entry logs prepared / freed, MB", None, ""),
            ("live data in them, MB", "live_mb", ".1f"),
            ("adds p99 without compaction, ms", "quiet_p99_ms", ".1f"),
            ("adds p99 during compaction, ms", "p99_ms", ".1f"),
            ("adds p50 without / during compaction, ms", None, ""),
            ("bookie CPU during the cycle (light load included), s", "cpu_s", ".2f"),
            ("load average during the point", "load", ".1f")]
    for name, key, fmt in rows:
        if key is None and name.startswith("entry logs"):
            lines.append(f"| {name} | {_num(o.get('prepared_mb'), '.1f')} / {_num(o.get('freed_mb'), '.1f')} | "
                         f"{_num(j.get('prepared_mb'), '.1f')} / {_num(j.get('freed_mb'), '.1f')} | - |")
        elif key is None:
            lines.append(f"| {name} | {_num(o.get('quiet_p50_ms'), '.1f')} / {_num(o.get('p50_ms'), '.1f')} | "
                         f"{_num(j.get('quiet_p50_ms'), '.1f')} / {_num(j.get('p50_ms'), '.1f')} | - |")
        else:
            lines.append(f"| {name} | {_num(o.get(key), fmt)} | {_num(j.get(key), fmt)} | "
                         f"{_ratio(o.get(key), j.get(key)) if key != 'load' else '-'} |")
    lines += ["", "Rewrite rate: ours/Java > 1 is ours faster. Times, latencies and CPU: ours/Java < 1 is ours "
              "lower (better). The rate is the live data of the prepared logs over the whole forced cycle (ledger "
              "scan, entry-log metadata, compaction, deletions), as seen from outside: BookKeeper exports no count "
              "of the bytes it copies. Our bookie's compaction alone, throttle accuracy included, is measured by "
              "`bench/gc_bench.py` (section \"Garbage collection\" below).", ""]
    return lines


def write_docs(section: str) -> None:
    write_section(DOCS, section, BEGIN, END, insert_before="<!-- adds:begin -->")


def _parse_ensembles(text: str) -> tuple[tuple[int, int, int], ...]:
    """``E/W/A,...``; each must satisfy A <= W <= E <= the 3 bookies each cluster has."""
    out = []
    for item in text.split(","):
        try:
            ensemble, write, ack = (int(x) for x in item.split("/"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not ensemble/write quorum/ack quorum, e.g. 3/2/2") from None
        if not 1 <= ack <= write <= ensemble <= 3:
            raise argparse.ArgumentTypeError(f"{item!r}: need 1 <= ack <= write <= ensemble <= 3 (bookies per cluster)")
        out.append((ensemble, write, ack))
    return tuple(out)


def _parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of entry sizes in bytes") from None
    if any(size <= 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: entry sizes must be positive")
    return sizes


def _parse_config(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--ours-config``, the key one our configuration model knows."""
    from bookie.config import BookieConfig

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE")
    try:
        BookieConfig.from_mapping({key: value}, "--ours-config")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from exc
    return key, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny run for the test suite; docs untouched")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=Settings.seconds, help="per measured point")
    parser.add_argument("--warmup-seconds", type=int, default=Settings.warmup_seconds, help="per warm-up pass")
    parser.add_argument("--warmup-max", type=int, default=Settings.warmup_max, help="warm-up passes at most")
    parser.add_argument("--throttle", type=int, default=1000, help="BenchThroughputLatency -throttle")
    parser.add_argument("--sizes", type=_parse_sizes, default=(100, 1024, 16 * 1024))
    parser.add_argument("--protocols", default="v3,v2")
    parser.add_argument("--ensembles", type=_parse_ensembles, default=((1, 1, 1), (3, 2, 2)), help="E/W/A,...")
    parser.add_argument("--workloads", default="adds,pyclient,reads,compaction")
    parser.add_argument("--gc-mib", type=int, default=Settings.gc_mib, help="compaction: prepared store, MiB")
    parser.add_argument("--gc-garbage", type=float, default=Settings.gc_garbage,
                        help="compaction: share of the store deleted (1 - 1/n)")
    parser.add_argument("--gc-log-mib", type=int, default=Settings.gc_log_mib, help="compaction: logSizeLimit, MiB")
    parser.add_argument("--profile", action="store_true", help="py-spy flame graph of our add path (1 KiB)")
    parser.add_argument("--no-docs", action="store_true", help="do not touch docs/benchmarks.md")
    parser.add_argument("--py-window", type=int, default=Settings.py_window,
                        help="our client's appends in flight (pyclient)")
    parser.add_argument("--ours-config", type=_parse_config, action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration key of our bookies (BookKeeper's name), repeatable; they run at "
                             "their defaults otherwise")
    parser.add_argument("--free-memory", action="store_true",
                        help="points start with whatever memory is free instead of a full page cache")
    parser.add_argument("--impls", default="java,ours", help="java,ours (ours alone: the optimisation loop)")
    add_workdir_argument(parser)
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    peer = chosen_peer(parser, args)
    for option, given, known in (("--impls", args.impls, ("java", "ours")),
                                 ("--workloads", args.workloads, ("adds", "pyclient", "reads", "compaction")),
                                 ("--protocols", args.protocols, ("v3", "v2"))):
        unknown = sorted(set(given.split(",")) - set(known))
        if unknown:
            parser.error(f"{option}: unknown {', '.join(unknown)} (choose from {', '.join(known)})")
    global IMPLS
    IMPLS = tuple(args.impls.split(","))
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.profile:
        prepare_profiler()
    ensembles = args.ensembles
    settings = Settings(rounds=args.rounds, seconds=args.seconds, throttle=args.throttle, sizes=args.sizes,
                        protocols=tuple(args.protocols.split(",")), ensembles=ensembles,
                        workloads=tuple(args.workloads.split(",")), profile=args.profile, gc_mib=args.gc_mib,
                        gc_garbage=args.gc_garbage, gc_log_mib=args.gc_log_mib,
                        warmup_seconds=args.warmup_seconds, warmup_max=args.warmup_max,
                        py_window=args.py_window, ours_config=dict(args.ours_config),
                        full_page_cache=not args.free_memory)
    if args.quick:
        # 10 s points and a 5 s warm-up pass: next to the rest of the test suite (load 5-10 on two cores), a
        # freshly started production JVM's first seconds (JIT, G1 sizing) completed no add in a 3 s point
        settings.rounds, settings.seconds, settings.sizes = 1, 10, (1024,)
        settings.full_page_cache = False  # a ballast of the machine's memory size is no test-suite fixture
        settings.warmup_seconds, settings.warmup_max = 5, 1
        settings.ensembles, settings.read_entries, settings.tail_rate = ((1, 1, 1),), 300, 200
        # 8 ledgers of 1 MiB in 2 MiB logs: every log still mixes a kept ledger with deleted ones, or is all dead
        settings.gc_mib, settings.gc_log_mib, settings.gc_rate, settings.gc_baseline_s = 8, 2, 100, 1.0
    with run_directory(args.workdir, "run-all-") as tmp:
        results = run(settings, tmp, lambda line: print(line, flush=True), peer)
    command = "python bench/run_all.py" + ("" if argv is None else " " + " ".join(argv))
    command = "python bench/run_all.py " + " ".join(sys.argv[1:]) if argv is None else command
    section = report(results, command.strip())
    print(section)
    if not args.quick and not args.no_docs:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        write_docs(section)
    print(json.dumps(results["points"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
