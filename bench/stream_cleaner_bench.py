"""Stream compaction benchmark: the single-machine cleaner next to the Spark compactor (local[*]) on the same
stream, and the cleaner's offset-map memory per million keys. One real ZooKeeper and three real bookies.

    python bench/stream_cleaner_bench.py           # full run, rewrites the "Stream compaction" section of
                                                   # docs/benchmarks.md
    python bench/stream_cleaner_bench.py --quick   # tiny run, docs untouched

Two identical streams are written (ensemble 3, write quorum 2, ack quorum 2; 16-byte keys, a tenth of the
records distinct keys, 100-byte values, 1 MiB ledgers); one is compacted by ``bookie.streams.cleaner.Cleaner``
in one pass, the other by ``bookie_audit.stream_compactor`` (its Spark session started before the clock runs).
Throughput = records (and bytes) read from the source ledgers / wall time of the pass, rewrite and swap
included. Memory per million keys: the offset map's own accounting and the Python heap growth (tracemalloc)
while one million 16-byte keys are inserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bookie.streams import Policies, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import OffsetMap
from bookie_fleet.local_bookies import plan_bookies, stop_all
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from docs_section import write_section  # bench/ is on sys.path when a bench script runs
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- streams:begin -->", "<!-- streams:end -->"
VALUE = 100


def map_memory(keys: int) -> dict[str, float]:
    offsets = OffsetMap(10**12)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for i in range(keys):
        offsets.put(b"%016d" % i, i)
    heap = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    scale = 1_000_000 / keys
    return {"accounted_mb": offsets.bytes_used * scale / 1e6, "heap_mb": heap * scale / 1e6}


async def write_streams(conn: dict[str, str], records: int) -> int:
    distinct = max(1, records // 10)
    async with Streams(conn["zk"], ledgers_root=conn["ledgers"], streams_root=conn["streams"]) as streams:
        await streams.create_namespace("bench", Policies(roll_bytes=1 << 20, cleanup_policy="compact", ensemble=3,
                                                         write_quorum=2, ack_quorum=2, delete_pause_ms=0))
        for name in ("cleaner", "spark"):
            await streams.create_stream("bench", name)
            async with await streams.writer("bench", name) as w:
                for start in range(0, records, 10_000):
                    await w.append_many([(b"%016d" % (i % distinct), os.urandom(VALUE // 2).hex().encode(), None)
                                         for i in range(start, min(records, start + 10_000))])
        return (await streams.metadata("bench", "cleaner")).total_bytes


async def run_cleaner(conn: dict[str, str]) -> dict[str, Any]:
    async with Streams(conn["zk"], ledgers_root=conn["ledgers"], streams_root=conn["streams"]) as streams:
        started = time.monotonic()
        result = await Cleaner(streams, map_bytes=1 << 30).clean("bench", "cleaner")
        return {"seconds": time.monotonic() - started, **result.to_json()}


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from bookie_audit.spark import build_session
    from bookie_audit.stream_compactor import Connection, compact_stream

    zk = ZooKeeperServer(tmp / "zk").start()
    bookies = plan_bookies(3, tmp / "bookies", zk.connect_string, "/bench-streams/ledgers", first_host=70,
                           flushInterval=1000)
    conn = {"zk": zk.connect_string, "ledgers": "/bench-streams/ledgers", "streams": "/bench-streams/streams"}
    spark = None
    try:
        for b in bookies:
            b.start(wait=False)
        for b in bookies:
            b.wait_ready(90)
        res: dict[str, Any] = {"records": args.records}
        res["stream_bytes"] = asyncio.run(write_streams(conn, args.records))
        res["cleaner"] = asyncio.run(run_cleaner(conn))
        spark = build_session(args.master, app_name="stream-compactor-bench")
        started = time.monotonic()
        result = compact_stream(spark, Connection(conn["zk"], conn["ledgers"], conn["streams"]), "bench", "spark")
        res["spark"] = {"seconds": time.monotonic() - started, **result.to_json()}
        res["master"] = args.master or "local[*]"
        res["map"] = map_memory(args.map_keys)
        return res
    finally:
        if spark is not None:
            spark.stop()
        stop_all(bookies)
        zk.stop()


def table(res: dict[str, Any], command: str) -> str:
    rows = []
    for label, key in (("single-machine cleaner", "cleaner"), (f"Spark compactor ({res['master']})", "spark")):
        r = res[key]
        rows.append(f"| {label} | {r['records_read'] / r['seconds']:,.0f} records/s | "
                    f"{r['bytes_before'] / r['seconds'] / 1e6:.2f} MB/s | {r['seconds']:.1f} s | "
                    f"{r['records_kept']:,} of {r['records_read']:,} kept, {r['bytes_reclaimed'] / 1e6:.1f} MB "
                    f"reclaimed |")
    return "\n".join([
        "## Stream compaction: single-machine cleaner vs Spark, offset-map memory",
        "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}; three bookies on this machine; "
        f"{res['records']:,} records ({res['stream_bytes'] / 1e6:.1f} MB in ledgers), 16-byte keys, "
        f"{res['records'] // 10:,} distinct, 100-byte values.",
        "",
        "| compactor | throughput | | wall time | result |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Offset map, per million 16-byte keys: {res['map']['accounted_mb']:.0f} MB by its own accounting "
        f"(the bound `map_bytes` is checked against), {res['map']['heap_mb']:.0f} MB of Python heap measured with "
        "tracemalloc.",
        "",
        "Both are bound by the Python ledger client's per-entry cost (one record per entry; every record is read",
        "once and every kept one written once); Spark adds its start-up per job and a shuffle, and pays off only",
        "when the keys no longer fit one machine's memory (the map needs about 0.2 GB per million keys).",
    ])


def write_docs(section: str) -> None:
    write_section(DOCS, f"{BEGIN}\n{section}\n{END}", BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny run; docs untouched")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--map-keys", type=int, default=1_000_000)
    parser.add_argument("--master", default=None)
    add_workdir_argument(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.records, args.map_keys = 5_000, 50_000
    with run_directory(args.workdir, "stream-cleaner-bench-") as tmp:
        res = run(args, tmp)
    print(json.dumps(res, indent=2, default=str))
    if not args.quick:
        write_docs(table(res, " ".join(["python bench/stream_cleaner_bench.py", *(argv or sys.argv[1:])])))
    else:
        print(table(res, "python bench/stream_cleaner_bench.py --quick"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
