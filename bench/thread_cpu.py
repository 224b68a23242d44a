"""Per-thread CPU of one saturated bookie, ours and Apache BookKeeper's, and the per-core ceiling it predicts.

    python bench/thread_cpu.py                    # 3 alternating rounds x 100,000 1 KiB v3 adds per bookie
    python bench/thread_cpu.py --connections 8 --window 1000 --adds 200000 --size 16384
    python bench/thread_cpu.py --quick            # tiny run for the test suite

One bookie of each implementation (bench/add_bench.py's: journal fsync on, 1 ms group wait; Java's at its
production JVM settings with DbLedgerStorage), started once and warmed up, then driven in turn (the order
alternates round after round) by bench/add_cpu.py's load generator: pre-encoded add frames on ``--connections``
connections, ``--window`` adds outstanding on each, so that the bookie, not the client, is the limit.

Measured per round, from /proc/<pid>/task/<tid>/schedstat before and after: every thread's CPU time, per add.
Threads are grouped by name: a Java thread's name is its OS name (the JVM sets it, 15 characters), with the
pool's numbering stripped; ours are the event loop (the main thread), the Python threads by their
``threading`` names (read with ``py-spy dump``; py-spy is in requirements.lock) and the threads no
interpreter knows (the journal writer, RocksDB's) by their OS names.

The model (printed, and quoted in docs/benchmarks.md): a thread that is one by design (``SINGLE``) saturates when
its CPU per add fills one core, at 1e6 / (its us per add) adds/s whatever the machine; everything else spreads
over the cores, so on C cores the bookie levels off at min(that single-thread ceiling, C x 1e6 / (the process's
us per add)). The inputs are measured on this machine, so a thread's cost includes what sharing two cores with
the load generator does to it; the prediction is a bound, not a measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import add_bench
import add_cpu
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from peer import add_peer_argument, chosen_peer

CORES = (4, 8, 16)
EVENT_LOOP = "event loop"
# Threads that are one per bookie by design, whatever the core count: their CPU per add bounds the bookie. Ours:
# the asyncio event loop (every connection's requests), the journal writer (a C thread, OS name "python" like
# the main thread's, told apart by being the one unnamed thread that is not the main one: see ``name_threads``)
# and the checkpoint. Java's (4.17 defaults, one journal directory): the journal and its force-write thread, the
# add worker pool (numAddWorkerThreads=1) and the sync (checkpoint) thread. Its Netty I/O threads (2 per core),
# read pool and GC threads scale with the machine.
SINGLE = {"ours": {EVENT_LOOP, "journal", "checkpoint"},
          "java": {"BookieJournal", "ForceWriteThrea", "BookieWriteThre", "SyncThread"}}


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """{tid: (OS thread name, CPU seconds so far)} of every thread of the process: the scheduler's run time in
    nanoseconds (/proc/<pid>/task/<tid>/schedstat), not stat's 10 ms ticks, which round a quiet thread to 0."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().rstrip("\n")
            run_ns = int((task / "schedstat").read_text().split()[0])
        except OSError:  # the thread ended between the listing and the read
            continue
        out[int(task.name)] = (name, run_ns / 1e9)
    return out


def java_group(os_name: str) -> str:
    """A Java thread's pool: its OS name without the pool's and the thread's numbers ("bookie-io-1-3" ->
    "bookie-io", "GC Thread#1" -> "GC Thread")."""
    return re.sub(r"([-#]\d+)+-?$", "", os_name).strip() or os_name


def py_spy_names(pid: int) -> dict[int, str]:
    """{OS thread id: threading name} of a Python process's threads, from ``py-spy dump --json``."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("py-spy not found: ./scripts/bootstrap installs it (requirements.lock)")
    text = subprocess.run([spy, "dump", "--json", "--pid", str(pid)], capture_output=True, text=True,
                          check=True, timeout=60).stdout
    return {t["os_thread_id"]: t["thread_name"] for t in json.loads(text) if t.get("os_thread_id")}


def name_threads(impl: str, pid: int, tids: dict[int, tuple[str, float]]) -> dict[int, str]:
    """{tid: group name}. Ours: a Python thread's pool is its ``threading`` name without the worker number
    ("read_3" -> "read"); of the threads no interpreter knows, those the process did not name (OS name =
    the main thread's) are the journal writer's, the only unnamed C thread our bookie starts."""
    if impl == "java":
        return {tid: java_group(name) for tid, (name, _) in tids.items()}
    python_names = py_spy_names(pid)
    main_os_name = tids[pid][0]
    out = {}
    for tid, (os_name, _) in tids.items():
        if tid == pid:
            out[tid] = EVENT_LOOP
        elif tid in python_names:
            out[tid] = re.sub(r"_\d+$", "", python_names[tid]) or python_names[tid]
        else:
            out[tid] = "journal" if os_name == main_os_name else java_group(os_name)
    return out


async def saturate(host: str, port: int, per_connection: list[list[bytes]], window: int) -> float:
    """Every connection driven at once; adds/s over all of them."""
    started = time.perf_counter()
    await asyncio.gather(*(add_cpu.drive(host, port, frames, window) for frames in per_connection))
    return sum(len(f) for f in per_connection) / (time.perf_counter() - started)


def measure(impl: str, bookie: Any, args: argparse.Namespace) -> dict[str, Any]:
    """One saturated round: the rate and every thread group's CPU per add."""
    pid = bookie.proc.pid
    host, port = bookie.bookie_id.rsplit(":", 1)
    per_connection = [add_cpu.frames(args.adds // args.connections, args.size, False)
                      for _ in range(args.connections)]
    before = thread_cpu(pid)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    rate = asyncio.run(saturate(host, int(port), per_connection, args.window))
    elapsed = time.perf_counter() - started
    after = thread_cpu(pid)
    names = name_threads(impl, pid, after)
    adds = sum(len(f) for f in per_connection)
    groups: dict[str, dict[str, float]] = {}
    for tid, (_, cpu) in after.items():
        used = cpu - before.get(tid, ("", 0.0))[1]
        g = groups.setdefault(names[tid], {"threads": 0, "us_per_add": 0.0, "busiest_thread_us_per_add": 0.0})
        g["threads"] += 1 if used > 0 else 0
        g["us_per_add"] += used * 1e6 / adds
        g["busiest_thread_us_per_add"] = max(g["busiest_thread_us_per_add"], used * 1e6 / adds)
    for g in groups.values():
        g["cores_busy"] = g["us_per_add"] * rate / 1e6
    return {"impl": impl, "adds_per_s": rate, "seconds": elapsed, "load": load,
            "process_us_per_add": sum(g["us_per_add"] for g in groups.values()), "groups": groups}


def model(impl: str, rounds: list[dict[str, Any]], size: int) -> dict[str, Any]:
    """Medians over the rounds, the busiest single-by-design thread and the ceiling it predicts at each core
    count (see the module's docstring)."""
    mine = [r for r in rounds if r["impl"] == impl]
    names = {n for r in mine for n in r["groups"]}
    groups = {n: {k: statistics.median(r["groups"].get(n, {}).get(k, 0.0) for r in mine)
                  for k in ("threads", "us_per_add", "busiest_thread_us_per_add", "cores_busy")} for n in names}
    process_us = statistics.median(r["process_us_per_add"] for r in mine)
    single = {n: groups[n]["busiest_thread_us_per_add"] for n in SINGLE[impl] if n in groups}
    busiest = max(single, key=lambda n: single[n]) if single else None
    ceiling = 1e6 / single[busiest] if busiest and single[busiest] > 0 else float("inf")
    predicted = {c: min(ceiling, c * 1e6 / process_us) for c in CORES}
    return {"adds_per_s": statistics.median(r["adds_per_s"] for r in mine),
            "adds_per_s_range": [min(r["adds_per_s"] for r in mine), max(r["adds_per_s"] for r in mine)],
            "process_us_per_add": process_us, "groups": groups, "busiest_single_thread": busiest,
            "single_thread_ceiling_adds_per_s": ceiling,
            "predicted_adds_per_s": predicted, "predicted_mb_per_s": {c: v * size / 1e6 for c, v in predicted.items()},
            "load": [min(r["load"] for r in mine), max(r["load"] for r in mine)]}


def print_model(impl: str, m: dict[str, Any]) -> None:
    print(f"{impl}: {m['adds_per_s']:.0f} adds/s (rounds {m['adds_per_s_range'][0]:.0f}-"
          f"{m['adds_per_s_range'][1]:.0f}), {m['process_us_per_add']:.1f} us/add in the process", flush=True)
    for name, g in sorted(m["groups"].items(), key=lambda kv: -kv[1]["us_per_add"]):
        if g["us_per_add"] >= 0.01:
            mark = " (one by design)" if name in SINGLE[impl] else ""
            print(f"  {name:18} {g['threads']:3.0f} threads {g['us_per_add']:6.2f} us/add, busiest thread "
                  f"{g['busiest_thread_us_per_add']:6.2f}, {g['cores_busy']:.2f} cores{mark}")
    print(f"  busiest single thread: {m['busiest_single_thread']}, saturates at "
          f"{m['single_thread_ceiling_adds_per_s']:.0f} adds/s; predicted: " + ", ".join(
              f"{c} cores {v:.0f} adds/s ({m['predicted_mb_per_s'][c]:.0f} MB/s)"
              for c, v in m["predicted_adds_per_s"].items()), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adds", type=int, default=100000, help="per round and bookie, over all connections")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--window", type=int, default=1000, help="adds outstanding per connection")
    parser.add_argument("--quick", action="store_true")
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    peer = chosen_peer(parser, args)
    args.peer = peer.version
    for key in ("adds", "rounds", "size", "connections", "window"):
        if getattr(args, key) <= 0:
            parser.error(f"--{key} must be positive, got {getattr(args, key)}")
    if args.adds < args.connections:
        parser.error(f"--adds ({args.adds}) must be at least --connections ({args.connections})")
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.adds, args.rounds = 8000, 1
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zk").start()
        bookies: dict[str, Any] = {}
        try:
            bookies["java"] = add_bench.start_java(Path(tmp) / "java", zk, "/java/ledgers", peer)
            bookies["ours"] = add_bench.start_ours(Path(tmp) / "ours", zk, "/ours/ledgers")
            for bookie in bookies.values():  # warm-up: the JVM's add path compiled, our imports done
                host, port = bookie.bookie_id.rsplit(":", 1)
                asyncio.run(saturate(host, int(port), [add_cpu.frames(min(args.adds, 50000) // args.connections,
                                                                      args.size, False)
                                                       for _ in range(args.connections)], args.window))
            for r in range(args.rounds):
                for impl in (("ours", "java") if r % 2 == 0 else ("java", "ours")):
                    row = measure(impl, bookies[impl], args) | {"round": r}
                    rounds.append(row)
                    print(f"round {r} {impl:4}: {row['adds_per_s']:7.0f} adds/s, {row['process_us_per_add']:5.1f} "
                          f"us/add, load {row['load']:.1f}", flush=True)
        finally:
            for bookie in bookies.values():
                bookie.stop()
            zk.stop()
    models = {impl: model(impl, rounds, args.size) for impl in ("ours", "java")}
    for impl, m in models.items():
        print_model(impl, m)
    print(json.dumps({"rounds": rounds, "models": models, "settings": vars(args), "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
