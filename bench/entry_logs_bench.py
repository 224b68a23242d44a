"""Entry-logs endpoint benchmark: how long after a bookie starts does ``GET /api/v1/bookie/entry_logs`` know
every entry log on disk, when none of them is in the persisted GC metadata? One real ZooKeeper, one real bookie.

    python bench/entry_logs_bench.py          # 1,000 logs; rewrites its section of docs/benchmarks.md
    python bench/entry_logs_bench.py --quick  # 100 logs, docs untouched

The bookie writes the logs itself (logSizeLimit just over 64 KiB, 8 KiB entries: ~7 entries per log), stops,
and its ``gc-entrylog-meta.json`` is deleted, so start-up must read every log again. Two start-ups are timed:
logs with their ledgers maps, and the same logs with the maps cut off the headers (a crashed bookie's logs),
which are scanned at ``compactionReadRateByBytes`` (default 100 MB/s). "Complete" is the first answer of
the endpoint (polled every 0.1 s once the bookie is ready, timed from the process start) that lists every
``*.log`` file with known figures.
Add latency is measured for sequential adds of 1 KiB from the moment the bookie is ready, while the endpoint
is polled, i.e. during the start-up extraction (for as long as it lasts), and again once it is over.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import statistics
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper, ClientConfig
from bookie.storage import entrylog_format as ef
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from docs_section import publish  # bench/ is on sys.path when a bench script runs
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

LOG_SIZE = 65 * 1024
ENTRY = 8 * 1024
PER_LEDGER = 56  # entries per ledger: ~8 logs each


def get_json(url: str, headers: dict[str, str]) -> Any:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as r:
        return json.loads(r.read())


def log_files(bookie: LocalBookie) -> list[Path]:
    current = bookie.ledger_dir / "current"
    return sorted(p for p in current.iterdir() if ef.parse_log_file_name(p.name) is not None)


async def write_logs(conf: ClientConfig, n_logs: int) -> None:
    payload = os.urandom(ENTRY)
    ledgers = max(1, n_logs * LOG_SIZE // (ENTRY + 4) // PER_LEDGER + 1)
    async with BookKeeper(conf) as bk:
        for _ in range(ledgers):
            handle = await bk.create_ledger(1, 1, 1, password=b"bench")
            await asyncio.gather(*(handle.append(payload) for _ in range(PER_LEDGER)))
            await handle.close()


async def add_latencies_ms(conf: ClientConfig, count: int) -> list[float]:
    out = []
    async with BookKeeper(conf) as bk:
        handle = await bk.create_ledger(1, 1, 1, password=b"bench")
        for _ in range(count):
            started = time.monotonic()
            await handle.append(os.urandom(1024))
            out.append((time.monotonic() - started) * 1000)
        await handle.close()
    return out


def strip_maps(bookie: LocalBookie) -> None:
    for path in log_files(bookie):
        with open(path, "r+b") as f:
            f.seek(ef.MAP_LOCATION_OFFSET)
            f.write(ef.encode_map_location(0, 0))


def complete(bookie: LocalBookie, expected: set[str]) -> bool:
    try:
        report = get_json(f"{bookie.http_url}/api/v1/bookie/entry_logs", bookie.auth_headers())
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
    logs = report["ledgerDirs"][0]["entryLogs"]
    names = {e["file"].rsplit("/", 1)[1] for e in logs}
    return expected <= names and all(e["figures"]["state"] != "unknown" for e in logs)


def _poll_complete(bookie: LocalBookie, expected: set[str], started: float, done: dict[str, float]) -> None:
    while time.monotonic() - started < 1800:
        if complete(bookie, expected):
            done["complete_s"] = time.monotonic() - started
            return
        time.sleep(0.1)


def timed_start(bookie: LocalBookie, conf: ClientConfig, adds: int) -> dict[str, Any]:
    (bookie.ledger_dir / "current" / "gc-entrylog-meta.json").unlink(missing_ok=True)
    expected = {p.name for p in log_files(bookie)}
    started = time.monotonic()
    bookie.start()
    ready_s = time.monotonic() - started
    done: dict[str, float] = {}
    poller = threading.Thread(target=_poll_complete, args=(bookie, expected, started, done))
    poller.start()  # the endpoint is asked every 0.1 s while the adds run
    during = asyncio.run(add_latencies_ms(conf, adds))
    poller.join()
    if "complete_s" not in done:
        raise TimeoutError("endpoint not complete 30 min after start")
    complete_s = done["complete_s"]
    after = asyncio.run(add_latencies_ms(conf, adds))
    metrics = urllib.request.urlopen(f"{bookie.http_url}/metrics", timeout=10).read().decode()
    scans = next(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                 if line.startswith("bookie_ENTRY_LOG_SCAN_TOTAL "))
    bookie.stop()
    return {"logs": len(expected), "ready_s": ready_s, "complete_s": complete_s, "scanned": int(scans),
            "add_during_ms": _summary(during), "add_after_ms": _summary(after)}


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": statistics.median(ordered), "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]}


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    zk = ZooKeeperServer(tmp / "zk").start()
    root = "/bench-entry-logs/ledgers"
    (bookie,) = plan_bookies(1, tmp / "bookie", zk.connect_string, root, first_host=61,
                             admin_token=secrets.token_urlsafe(32), logSizeLimit=LOG_SIZE, flushInterval=1000,
                             gcWaitTime=3600000)
    conf = ClientConfig(zk_servers=zk.connect_string, ledgers_root=root)
    try:
        bookie.start()
        asyncio.run(write_logs(conf, args.logs))
        bookie.stop()
        res = {"maps": timed_start(bookie, conf, args.adds)}
        strip_maps(bookie)
        res["scans"] = timed_start(bookie, conf, args.adds)
        return res
    finally:
        bookie.stop()
        zk.stop()


def table(res: dict[str, Any], command: str) -> str:
    rows = []
    for key, label in (("maps", "ledgers maps"), ("scans", "no maps: scanned")):
        r = res[key]
        rows.append(f"| {label} | {r['logs']} | {r['ready_s']:.1f} s | {r['complete_s']:.1f} s | "
                    f"{r['add_during_ms']['p50']:.1f} / {r['add_during_ms']['p99']:.1f} ms | "
                    f"{r['add_after_ms']['p50']:.1f} / {r['add_after_ms']['p99']:.1f} ms |")
    return "\n".join([
        "## Entry-logs endpoint: complete after start",
        "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}; one bookie, entry logs of ~64 KiB written by the "
        "bookie itself, persisted GC metadata deleted before each start, no GC cycle (gcWaitTime 1 h).",
        "",
        "| logs read at start-up from | logs | process start to ready | to endpoint complete | "
        "add p50 / p99 right after ready | add p50 / p99 after |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "\"Complete\": every `*.log` listed with known figures (polled every 0.1 s once ready; times from the",
        "process start). Adds are sequential 1 KiB adds of the Python client (fsync on) started once the bookie",
        "is ready, while the endpoint is polled: they overlap the start-up extraction for as long as it lasts",
        "(the rest of them, and the 'after' column, run against an idle bookie).",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 logs; docs untouched")
    parser.add_argument("--logs", type=int, default=1000, help="entry logs to write")
    parser.add_argument("--adds", type=int, default=200, help="adds timed in each phase")
    add_workdir_argument(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.logs, args.adds = 100, 50
    with run_directory(args.workdir, "entry-logs-bench-") as tmp:
        res = run(args, tmp)
    command = "python bench/entry_logs_bench.py" + (" --quick" if args.quick else "")
    publish("entry-logs", table(res, command), res, write=not args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
