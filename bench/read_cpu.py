"""Catch-up reads on our bookies: rate and bookie CPU per entry, the read path's optimisation measure.

    python bench/read_cpu.py                  # 3 rounds, a 4,996-entry 1 KiB 3/2/2 ledger each
    PYTHONPATH=/path/to/other/checkout/bookie_image python bench/read_cpu.py   # another version's bookies
    python bench/read_cpu.py --quick          # tiny run for the test suite

Three of our bookies (journal fsync on, 1 ms group wait, as in bench/run_all.py) and our client. Each round
writes a closed ledger, restarts the bookies so that every entry is on disk in an entry log (a reader catching
up on old data), then reads the ledger from the start twice, 100 entries per ``read`` as run_all.py's
catch-up point does: "cold" from the entry logs, "cached" again right after. Reported per reading: entries/s,
the bookies' CPU per 100k entries (utime + stime of every bookie process, from /proc) and the p99 of a batch.
Nothing is written to docs: docs/benchmarks.md quotes its before/after numbers by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_all
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer


def restart(cluster: run_all.Cluster) -> None:
    for b in cluster.bookies:
        b.stop()
    for b in cluster.bookies:
        b.start(wait=True, timeout=90)


def read_round(cluster: run_all.Cluster, entries: int) -> dict[str, float]:
    ledger = asyncio.run(run_all.py_write_ledger(cluster, run_all.brtl_entries(entries), 1024))
    restart(cluster)
    out: dict[str, float] = {}
    for reading in ("cold", "cached"):
        ops, _p50, p99, count, cpu, load = run_all.measured(
            cluster, partial(run_all._sync, run_all.py_catchup(cluster, ledger)))
        if count == 0:
            raise RuntimeError(f"the {reading} catch-up read failed (see above)")
        out |= {f"{reading}_entries_per_s": ops, f"{reading}_cpu_s_per_100k": cpu, f"{reading}_p99_ms": p99,
                "load": load}
    run_all.reclaim(cluster)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--entries", type=int, default=5000, help="ledger length (rounded to one "
                        "BenchReadThroughputLatency stops on, as run_all.py does)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.rounds, args.entries = 1, 300
    work = Path(tempfile.mkdtemp(prefix="read-cpu-"))
    zk = ZooKeeperServer(work / "zk")
    started: dict[str, run_all.Cluster] = {}
    results = []
    try:
        zk.start()
        cluster = run_all.start_clusters(work, zk.connect_string, 3, ("ours",), started, peer=None)["ours"]
        for r in range(args.rounds):
            row = {"round": r} | read_round(cluster, args.entries)
            results.append(row)
            print(f"round {r}: cold {row['cold_entries_per_s']:7.0f} entries/s, "
                  f"{row['cold_cpu_s_per_100k']:5.1f} s CPU/100k, p99 {row['cold_p99_ms']:5.1f} ms | cached "
                  f"{row['cached_entries_per_s']:7.0f} entries/s, {row['cached_cpu_s_per_100k']:5.1f} s CPU/100k, "
                  f"p99 {row['cached_p99_ms']:5.1f} ms | load {row['load']:.1f}", flush=True)
            time.sleep(1)
    finally:
        run_all.stop_clusters(started)
        zk.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
