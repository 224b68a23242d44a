"""Add throughput and latency of our bookie next to Apache BookKeeper's, fsync on, same machine, same run.

    python bench/add_bench.py                 # full run, rewrites the "Adds" section of docs/benchmarks.md
    python bench/add_bench.py --quick         # seconds-long smoke run (used by the test suite), no docs

Each round starts one bookie of each implementation on a fresh directory of the same disk (alternating
which goes first) and drives it with the same load generator: pipelined v3 adds, a fixed window of
outstanding requests over one connection, entries of 100 B, 1 KiB and 16 KiB. Apache BookKeeper's bookie is
the release of ``--peer`` (bench/peer.py). The disk's fdatasync rate is measured in the same run, since a
journal that fsyncs cannot ack faster than group commits allow.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import random
import statistics
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.entry import DigestType, digest_manager, generate_master_key, package_entry
from bookie_fleet.java_bookies import plan_java_bookies
from bookie_fleet.local_bookies import plan_bookies
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from docs_section import write_section  # bench/ is on sys.path when a bench script runs
from peer import Peer, add_peer_argument, chosen_peer  # bench/ is on sys.path when a bench script runs
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

SIZES = (100, 1024, 16 * 1024)
TICKS = os.sysconf("SC_CLK_TCK")
KEY = generate_master_key(b"bench")
DIGEST = digest_manager(DigestType.CRC32C, b"bench")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- adds:begin -->", "<!-- adds:end -->"


@dataclass
class Result:
    impl: str
    size: int
    adds_per_s: float
    p50_ms: float
    p99_ms: float
    adds: int = 0
    cpu_us_per_add: float = 0.0  # the bookie process's CPU (user + system) over the point, per add answered


def fdatasync_rate(directory: Path, seconds: float) -> float:
    """4 KiB write + fdatasync per iteration on the benchmark's disk."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    block = os.urandom(4096)
    count, deadline = 0, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            os.pwrite(fd, block, (count % 256) * 4096)
            os.fdatasync(fd)
            count += 1
    finally:
        os.close(fd)
        path.unlink()
    return count / seconds


async def drive(bookie_id: str, size: int, seconds: float, window: int) -> Result:
    host, port = bookie_id.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    ledgers = [random.randrange(1, 2**40) for _ in range(8)]
    next_entry = dict.fromkeys(ledgers, 0)
    payload = os.urandom(size)
    txn = itertools.count(1)
    sent_at: dict[int, float] = {}
    latencies: list[float] = []
    done = 0
    stop_at = time.monotonic() + seconds

    def send_one() -> None:
        ledger = random.choice(ledgers)
        entry_id = next_entry[ledger]
        next_entry[ledger] += 1
        body = package_entry(DIGEST, ledger, entry_id, entry_id - 1, size * (entry_id + 1), payload)
        txn_id = next(txn)
        sent_at[txn_id] = time.perf_counter()
        writer.write(client_codec.encode_request(m.AddRequest(m.Wire.v3(txn_id), ledger, entry_id, KEY, body)))

    for _ in range(window):
        send_one()
    started = time.monotonic()
    while sent_at:
        (length,) = struct.unpack(">i", await reader.readexactly(4))
        response = client_codec.decode_response(await reader.readexactly(length), 3)
        if response.status != 0:
            raise RuntimeError(f"{bookie_id}: add failed with {response.status!r}")
        latencies.append(time.perf_counter() - sent_at.pop(response.wire.txn_id))
        done += 1
        if time.monotonic() < stop_at:
            send_one()
    elapsed = time.monotonic() - started
    writer.close()
    latencies.sort()
    return Result("", size, done / elapsed, 1000 * latencies[len(latencies) // 2],
                  1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], done)


def process_cpu_s(pid: int, thread: int | None = None) -> float:
    """User + system CPU seconds so far of a process, or of one of its threads (/proc/<pid>[/task/<tid>]/stat)."""
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_ours(base: Path, zk: ZooKeeperServer, root: str, first_host: int = 201) -> Any:
    bookie = plan_bookies(1, base, zk.connect_string, root, first_host=first_host, journalSyncData=True,
                          journalMaxGroupWaitMSec=1, flushInterval=10000)[0]
    bookie.start()
    return bookie


async def _init_cluster(zk: ZooKeeperServer, root: str) -> None:
    from bookie.metadata.store import MetadataStore

    async with MetadataStore(zk.connect_string, root) as store:
        await store.init_cluster()


def start_java(base: Path, zk: ZooKeeperServer, root: str, peer: Peer) -> Any:
    asyncio.run(_init_cluster(zk, root))  # Java bookies expect a formatted cluster
    bookie = plan_java_bookies(1, base, zk.connect_string, root, first_host=202, production=True,
                               journalSyncData=True, lib_dir=peer.lib,
                               ledgerStorageClass="org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                               log_level="warn")[0]
    bookie.start()
    return bookie


def run(rounds: int, seconds: float, window: int, workdir: Path, peer: Peer) -> tuple[list[Result], float]:
    zk = ZooKeeperServer(workdir / "zk").start()
    results: list[Result] = []
    try:
        fsyncs = fdatasync_rate(workdir, min(seconds, 3))
        starters: dict[str, Callable[[Path, ZooKeeperServer, str], Any]] = {
            "python": start_ours, "java": partial(start_java, peer=peer)}
        for r in range(rounds):
            order = ["python", "java"] if r % 2 == 0 else ["java", "python"]
            for impl in order:
                bookie = starters[impl](workdir / f"{impl}-{r}", zk, f"/{impl}-{r}/ledgers")
                try:
                    asyncio.run(drive(bookie.bookie_id, 1024, min(seconds, 2), window))  # warm-up (JIT, caches)
                    for size in SIZES:
                        cpu_before = process_cpu_s(bookie.proc.pid)
                        res = asyncio.run(drive(bookie.bookie_id, size, seconds, window))
                        res.cpu_us_per_add = (process_cpu_s(bookie.proc.pid) - cpu_before) / max(res.adds, 1) * 1e6
                        res.impl = impl
                        results.append(res)
                        print(f"round {r} {impl:>6} {size:>6} B: {res.adds_per_s:8.0f} adds/s "
                              f"p50 {res.p50_ms:6.2f} ms p99 {res.p99_ms:6.2f} ms, bookie CPU "
                              f"{res.cpu_us_per_add:6.1f} us/add", flush=True)
                finally:
                    bookie.stop()
    finally:
        zk.stop()
    return results, fsyncs


def table(results: list[Result], fsyncs: float, rounds: int, seconds: float, window: int, command: str,
          peer: Peer) -> str:
    def med(impl: str, size: int, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in results if r.impl == impl and r.size == size)

    lines = [BEGIN, f"## Adds: our bookie vs {peer.name} (fsync on)", "",
             f"Command: `{command}`  ", f"Machine: {os.cpu_count()} cores, {platform.platform()}; "
             f"disk fdatasync rate measured in the same run: **{fsyncs:.0f}/s** (4 KiB writes).  ",
             f"Load: one connection, {window} outstanding v3 adds on 8 ledgers, {seconds:g} s per point, "
             f"{rounds} alternating rounds, medians. One bookie per implementation, ensemble 1.", "",
             "| entry | ours adds/s | Java adds/s | ratio | ours p50 ms | Java p50 ms | ours p99 ms | Java p99 ms "
             "| p99 ratio | ours CPU us/add | Java CPU us/add | CPU ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size in SIZES:
        ours, java = med("python", size, "adds_per_s"), med("java", size, "adds_per_s")
        p99o, p99j = med("python", size, "p99_ms"), med("java", size, "p99_ms")
        cpuo, cpuj = med("python", size, "cpu_us_per_add"), med("java", size, "cpu_us_per_add")
        lines.append(f"| {size} B | {ours:.0f} | {java:.0f} | {ours / java:.2f}x | {med('python', size, 'p50_ms'):.2f} "
                     f"| {med('java', size, 'p50_ms'):.2f} | {p99o:.2f} | {p99j:.2f} | {p99o / p99j:.2f}x "
                     f"| {cpuo:.1f} | {cpuj:.1f} | {cpuo / cpuj:.2f}x |")
    lines += ["", "Ratio > 1 means ours is faster (throughput); p99 and CPU ratios < 1 mean ours is lower (better). "
              "CPU: the bookie process's user + system time over the point, per add answered.", END]
    return "\n".join(lines)


def write_docs(section: str) -> None:
    write_section(DOCS, section, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny run for the test suite; docs untouched")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--window", type=int, default=100)
    add_workdir_argument(parser)
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    peer = chosen_peer(parser, args)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.rounds, args.seconds, args.window = 1, 0.5, 10
    with run_directory(args.workdir, "add-bench-") as tmp:
        results, fsyncs = run(args.rounds, args.seconds, args.window, tmp, peer)
    command = ("python bench/add_bench.py" + (f" --rounds {args.rounds}" if args.rounds != 3 else "")
               + (f" --peer {args.peer}" if args.peer else ""))
    section = table(results, fsyncs, args.rounds, args.seconds, args.window, command, peer)
    print(section)
    if not args.quick:
        write_docs(section)
    print(json.dumps([r.__dict__ for r in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
