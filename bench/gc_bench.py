"""GC benchmark: compaction throughput next to the disk's sequential write bandwidth, throttle accuracy, and
the time from a ledger's deletion to its space being reclaimed. One real ZooKeeper and one real bookie.

    python bench/gc_bench.py            # full run, rewrites the "Garbage collection" section of docs/benchmarks.md
    python bench/gc_bench.py --quick    # tiny run, docs untouched

Each round writes ledgers with the Python client (ensemble 1), interleaving live and soon-dead ledgers so every
entry log mixes both (25 % live), restarts the bookie so all logs are finalized, deletes the dead ledgers in
ZooKeeper and forces one GC over REST. Compaction throughput is live bytes copied / compaction time, both from
the bookie's own counters (COMPACTED_BYTES, COMPACT_RUNTIME_SECONDS). The sequential write bandwidth is measured
on the same file system in the same run (1 MiB writes, fsync at the end).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import time
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from bookie.client import BookKeeper, ClientConfig
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from docs_section import publish  # bench/ is on sys.path when a bench script runs
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

MIB = 1 << 20
ENTRY = 16 * 1024
PER_LEDGER = 64  # entries of each ledger write_mixed writes: 1 MiB ledgers
UNLIMITED = {"isThrottleByBytes": True, "compactionRateByBytes": 10**12, "compactionRateByEntries": 10**9}


class AdminBookie(Protocol):
    """What the GC helpers below need of a bookie: ours (LocalBookie) or Apache BookKeeper's (JavaBookie, planned
    with an HTTP port), so bench/run_all.py drives both through the same REST calls."""

    @property
    def http_url(self) -> str: ...

    @property
    def ledger_dir(self) -> Path: ...

    def auth_headers(self) -> dict[str, str]: ...


def sequential_write_mb_s(directory: Path, mib: int) -> float:
    path = directory / "seqwrite.bin"
    block = os.urandom(MIB)
    started = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(mib):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.monotonic() - started
    path.unlink()
    return mib / elapsed * MIB / 1e6


def metrics(bookie: LocalBookie) -> dict[str, float]:
    with urllib.request.urlopen(f"{bookie.http_url}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("bookie_") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name.removesuffix("_total")] = float(value)
    return out


def rest(bookie: AdminBookie, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{bookie.http_url}{path}", data=data, method=method,
                                 headers=bookie.auth_headers())
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def forced_gc(bookie: AdminBookie, request: dict[str, bool] | None = None) -> float:
    """One forced GC cycle (PUT /api/v1/bookie/gc with ``request``, major and minor by default), waited for
    through GET /api/v1/bookie/gc: seconds from the request to the bookie no longer being in a forced GC."""
    started = time.monotonic()
    rest(bookie, "PUT", "/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True} if request is None else request)
    while rest(bookie, "GET", "/api/v1/bookie/gc")["is_in_force_gc"] == "true":
        if time.monotonic() - started > 600:
            raise TimeoutError("forced GC still running after 600 s")
        time.sleep(0.05)
    return time.monotonic() - started


async def write_mixed(conf: ClientConfig, total_mib: int, live_share: float) -> tuple[list[int], list[int]]:
    """Ledgers of PER_LEDGER entries of ENTRY bytes, live and dead interleaved; returns (live ids, dead ids)."""
    ledgers = max(4, int(total_mib * MIB / ENTRY / PER_LEDGER))
    live: list[int] = []
    dead: list[int] = []
    payload = os.urandom(ENTRY)
    async with BookKeeper(conf) as bk:
        for i in range(ledgers):
            handle = await bk.create_ledger(1, 1, 1, password=b"bench")
            await asyncio.gather(*(handle.append(payload) for _ in range(PER_LEDGER)))
            await handle.close()
            (live if (i % round(1 / live_share)) == 0 else dead).append(handle.ledger_id)
    return live, dead


async def delete(conf: ClientConfig, ids: list[int]) -> None:
    async with BookKeeper(conf) as bk:
        for lid in ids:
            await bk.delete_ledger(lid)


def log_bytes(bookie: AdminBookie) -> int:
    return sum(p.stat().st_size for p in (bookie.ledger_dir / "current").glob("*.log"))


def compaction_round(bookie: LocalBookie, conf: ClientConfig, total_mib: int,
                     throttle: dict[str, Any]) -> dict[str, float]:
    bookie.overrides.update(throttle)
    bookie.restart()
    live, dead = asyncio.run(write_mixed(conf, total_mib, 0.25))
    bookie.restart()  # finalize every log
    before_bytes, before = log_bytes(bookie), metrics(bookie)
    asyncio.run(delete(conf, dead))
    elapsed = forced_gc(bookie)
    after = metrics(bookie)
    copied = after["bookie_COMPACTED_BYTES"] - before.get("bookie_COMPACTED_BYTES", 0)
    entries = after["bookie_COMPACTED_ENTRY_TOTAL"] - before.get("bookie_COMPACTED_ENTRY_TOTAL", 0)
    seconds = after["bookie_COMPACT_RUNTIME_SECONDS"] - before.get("bookie_COMPACT_RUNTIME_SECONDS", 0)
    asyncio.run(delete(conf, live))  # leave nothing for the next round
    forced_gc(bookie)
    return {"written_mib": total_mib, "copied_mb": copied / 1e6, "entries": entries, "compact_s": seconds,
            "mb_s": copied / 1e6 / seconds if seconds else 0.0, "entries_s": entries / seconds if seconds else 0.0,
            "cycle_s": elapsed, "freed_mb": (before_bytes - log_bytes(bookie)) / 1e6}


def reclaim_latency(bookie: LocalBookie, conf: ClientConfig, total_mib: int) -> float:
    """Scheduled GC only (gcWaitTime 1 s): seconds from the deletions to the dead logs' files being gone."""
    bookie.overrides.update({**UNLIMITED, "gcWaitTime": 1000})
    bookie.restart()
    live, dead = asyncio.run(write_mixed(conf, total_mib, 0.25))
    bookie.restart()
    before = log_bytes(bookie)
    started = time.monotonic()
    asyncio.run(delete(conf, live + dead))
    while log_bytes(bookie) > before * 0.1:
        if time.monotonic() - started > 300:
            raise TimeoutError("scheduled GC did not reclaim the deleted ledgers' logs in 300 s")
        time.sleep(0.05)
    return time.monotonic() - started


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    zk = ZooKeeperServer(tmp / "zk").start()
    root = "/bench-gc/ledgers"
    (bookie,) = plan_bookies(1, tmp / "bookie", zk.connect_string, root, first_host=60,
                             admin_token=secrets.token_urlsafe(32),
                             logSizeLimit=64 * MIB, flushInterval=1000, gcWaitTime=600000,
                             gcEntryLogDeletionPauseMs=0, compactionReadRateByBytes=0)
    conf = ClientConfig(zk_servers=zk.connect_string, ledgers_root=root)
    try:
        bookie.start()
        res: dict[str, Any] = {"seq_write_mb_s": sequential_write_mb_s(bookie.data_dir, args.seq_mib)}
        res["unthrottled"] = compaction_round(bookie, conf, args.mib, UNLIMITED)
        res["bytes_limit"] = args.bytes_rate
        res["by_bytes"] = compaction_round(bookie, conf, args.small_mib,
                                           {"isThrottleByBytes": True, "compactionRateByBytes": args.bytes_rate})
        res["entries_limit"] = args.entries_rate
        res["by_entries"] = compaction_round(bookie, conf, args.small_mib,
                                             {"isThrottleByBytes": False, "compactionRateByEntries": args.entries_rate})
        res["reclaim_s"] = reclaim_latency(bookie, conf, args.small_mib)
        return res
    finally:
        bookie.stop()
        zk.stop()


def table(res: dict[str, Any], command: str) -> str:
    u, b, e = res["unthrottled"], res["by_bytes"], res["by_entries"]
    return "\n".join([
        "## Garbage collection: compaction throughput, throttle accuracy, reclaim latency",
        "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}; one bookie, 64 MiB entry logs, 16 KiB entries, "
        "25 % of each log live.",
        "",
        "| measurement | value |",
        "|---|---|",
        f"| sequential write bandwidth, same file system (1 MiB writes + fsync) | {res['seq_write_mb_s']:.0f} MB/s |",
        f"| compaction, unthrottled: live bytes rewritten per second | {u['mb_s']:.0f} MB/s "
        f"({u['mb_s'] / res['seq_write_mb_s']:.2f}x sequential write; {u['copied_mb']:.0f} MB in "
        f"{u['compact_s']:.2f} s) |",
        f"| whole forced cycle, unthrottled ({u['written_mib']} MiB of logs) | {u['cycle_s']:.2f} s, "
        f"{u['freed_mb']:.0f} MB freed |",
        f"| throttle by bytes: configured / achieved | {res['bytes_limit'] / 1e6:.1f} / {b['mb_s']:.1f} MB/s "
        f"({b['mb_s'] * 1e6 / res['bytes_limit']:.0%}) |",
        f"| throttle by entries: configured / achieved | {res['entries_limit']} / {e['entries_s']:.0f} entries/s "
        f"({e['entries_s'] / res['entries_limit']:.0%}) |",
        f"| deletion to space reclaimed, scheduled GC (gcWaitTime 1 s) | {res['reclaim_s']:.2f} s |",
        "",
        "Achieved rates are measured over the compaction phase of the cycle (entry-log scan included), so they",
        "sit a little under the configured ones; the bucket starts empty, so there is no initial burst above them.",
        "The logs were written just before each round, so compaction reads them from a warm page cache; its",
        "writes are fsynced like the sequential-write measurement's.",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny run; docs untouched")
    parser.add_argument("--mib", type=int, default=512, help="logs written for the unthrottled round")
    parser.add_argument("--small-mib", type=int, default=128, help="logs written for the throttled rounds")
    parser.add_argument("--seq-mib", type=int, default=512)
    parser.add_argument("--bytes-rate", type=int, default=10_000_000)
    parser.add_argument("--entries-rate", type=int, default=500)
    add_workdir_argument(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.mib, args.small_mib, args.seq_mib = 16, 8, 16
    with run_directory(args.workdir, "gc-bench-") as tmp:
        res = run(args, tmp)
    command = "python bench/gc_bench.py" + (" --quick" if args.quick else "")
    publish("gc", table(res, command), res, write=not args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
