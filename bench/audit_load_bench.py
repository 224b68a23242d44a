"""What a full-scan audit through the bookies costs their writers: add latency while the audit reads every entry
log through the admin API (``bookie+http://``), at the default throttle and unthrottled, next to no audit, same
bookies, same run.

    python bench/audit_load_bench.py            # 3 rounds; rewrites its section of docs/benchmarks.md
    python bench/audit_load_bench.py --quick    # tiny run, docs untouched
    python bench/audit_load_bench.py --report-only   # the docs section again from bench/audit_load_results.json

Three of our bookies (journal fsync on), 3/2/2 ledgers filling several entry logs per bookie, restarted so the
logs are finalized. Each point runs a paced add load (our Python client, ``RATE`` adds/s of 1 KiB, open loop, so a
slowed bookie shows as latency) for ``POINT_S`` seconds, while ``READERS`` reader processes fetch the bookies'
entry logs through ``/api/v1/bookie/entry_log_files`` in 8 MiB ranges, over and over, as Spark executors do in a
full scan (``bookie_audit.bookie_http``; no parsing, so the readers' own CPU stays small: on a real cluster the
executors run elsewhere). Modes: no readers; readers with each bookie at its default
``httpEntryLogReadRateByBytes`` (50 MB/s); readers with the throttle off (0). The throttle is switched with
``PUT /api/v1/config/server_config``, which applies at once. Modes alternate their order every round; the table
shows medians over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bookie_fleet.processes import stop_on_sigterm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from docs_section import publish  # noqa: E402  (bench/ on the path)

RESULTS = REPO / "bench" / "audit_load_results.json"
RATE = 300            # adds/s
ENTRY = 1024
POINT_S = 15.0
READERS = 2
RANGE = 8 << 20
DATA_MB_PER_BOOKIE = 96
DEFAULT_RATE = 50_000_000
MODES = ("no audit", "full scan, default throttle (50 MB/s per bookie)", "full scan, throttle off")


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(pct / 100 * (len(values) - 1)))]


def reader(urls: list[str], token_file: str, seconds: float) -> None:
    """A reader process: every log of every bookie, range after range, until ``seconds`` passed; prints bytes."""
    from bookie_audit import bookie_http

    bookie_http.configure(token_file)
    clients = [bookie_http.filesystem_from_uri(u)[0].handler.client for u in urls]
    done = 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        for client in clients:
            for log in client.listing(fresh=True)[1].values():
                for offset in range(0, log.size, RANGE):
                    if time.monotonic() >= stop:
                        break
                    done += len(client.read(log, offset, min(RANGE, log.size - offset)))
    print(json.dumps({"bytes": done}), flush=True)


def set_rate(bookies: list[Any], rate: int) -> None:
    for b in bookies:
        request = urllib.request.Request(f"{b.http_url}/api/v1/config/server_config", method="PUT",
                                         data=json.dumps({"httpEntryLogReadRateByBytes": rate}).encode(),
                                         headers=b.auth_headers())
        with urllib.request.urlopen(request, timeout=30):
            pass


async def paced_adds(lh: Any, seconds: float) -> list[float]:
    payload = b"a" * ENTRY
    latencies: list[float] = []
    futures: list[asyncio.Future[int]] = []
    started = time.perf_counter()

    def done(sent: float, fut: asyncio.Future[int]) -> None:
        if not fut.cancelled() and fut.exception() is None:
            latencies.append(1000 * (time.perf_counter() - sent))

    while time.perf_counter() - started < seconds:
        delay = started + len(futures) / RATE - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        sent = time.perf_counter()
        fut = lh.append(payload)
        fut.add_done_callback(lambda f, s=sent: done(s, f))
        futures.append(fut)
    await asyncio.gather(*futures)
    return sorted(latencies)


async def fill(conf: Any, megabytes: int) -> None:
    from bookie.client import BookKeeper

    async with BookKeeper(conf) as bk:
        lh = await bk.create_ledger(3, 2, 2)
        payload = os.urandom(16 * 1024)
        futures = [lh.append(payload) for _ in range(megabytes * 1024 * 1024 * 3 // 2 // len(payload))]
        await asyncio.gather(*futures)
        await lh.close()


async def add_load(conf: Any, seconds: float) -> list[float]:
    from bookie.client import BookKeeper

    async with BookKeeper(conf) as bk:
        lh = await bk.create_ledger(3, 2, 2)
        latencies = await paced_adds(lh, seconds)
        await lh.close()
    return latencies


def point(conf: Any, bookies: list[Any], mode: str, token_file: str, seconds: float) -> dict[str, Any]:
    procs: list[subprocess.Popen[str]] = []
    if mode != MODES[0]:
        set_rate(bookies, DEFAULT_RATE if mode == MODES[1] else 0)
        urls = [f"bookie+{b.http_url}" for b in bookies]
        procs = [subprocess.Popen([sys.executable, __file__, "--reader", token_file, str(seconds), *urls],
                                  stdout=subprocess.PIPE, text=True) for _ in range(READERS)]
        time.sleep(1.0)  # the readers connected and reading
    load = os.getloadavg()[0]
    latencies = asyncio.run(add_load(conf, seconds - (1.0 if procs else 0.0)))
    read = 0
    for p in procs:
        out, _ = p.communicate(timeout=120)
        read += json.loads(out.strip().splitlines()[-1])["bytes"]
    return {"mode": mode, "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99),
            "adds": len(latencies), "read_mb_s": read / 1e6 / seconds, "load": load}


def run(rounds: int, seconds: float, megabytes: int) -> list[dict[str, Any]]:
    from bookie.client.config import ClientConfig
    from bookie_fleet.local_bookies import plan_bookies, start_all, stop_all
    from bookie_fleet.zookeeper import ZooKeeperServer

    with tempfile.TemporaryDirectory(prefix="audit-load-bench-") as tmp:
        work = Path(tmp)
        zk = ZooKeeperServer(work / "zk").start()
        root = "/bench-audit/ledgers"
        bookies = plan_bookies(3, work / "bookies", zk.connect_string, root, first_host=231,
                               admin_token=secrets.token_urlsafe(32), journalSyncData=True,
                               logSizeLimit=32 * 1024 * 1024, gcWaitTime=3_600_000)
        try:
            start_all(bookies, 90)
            conf = ClientConfig(zk_servers=zk.connect_string, ledgers_root=root)
            asyncio.run(fill(conf, megabytes))
            for b in bookies:
                b.restart()
            token_file = str(bookies[0].admin_token_file)
            points = []
            for r in range(rounds):
                order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
                for mode in order:
                    p = point(conf, bookies, mode, token_file, seconds)
                    p["round"] = r
                    print(json.dumps(p), flush=True)
                    points.append(p)
            return points
        finally:
            stop_all(bookies)
            zk.stop()


def section(points: list[dict[str, Any]], rounds: int, seconds: float, megabytes: int) -> str:
    rows = []
    for mode in MODES:
        ps = [p for p in points if p["mode"] == mode]
        per_round = ", ".join(f"{p['p99_ms']:.1f}" for p in sorted(ps, key=lambda p: p["round"]))
        rows.append(f"| {mode} | {statistics.median(p['p50_ms'] for p in ps):.2f} | "
                    f"{statistics.median(p['p99_ms'] for p in ps):.2f} | {per_round} | "
                    f"{statistics.median(p['adds'] for p in ps):.0f} | "
                    f"{statistics.median(p['read_mb_s'] for p in ps):.1f} | "
                    f"{statistics.median(p['load'] for p in ps):.1f} |")
    return "\n".join([
        "## Storage audit through the bookies: add latency during a full scan",
        "",
        "Command: `python bench/audit_load_bench.py`  ",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}.  ",
        f"Load: 3 of our bookies (journal fsync on), {megabytes} MB of entry logs each; {RATE} adds/s of {ENTRY} B "
        f"(3/2/2, our Python client, open loop) for {seconds:.0f} s per point, while {READERS} reader processes fetch "
        "every entry log of the three bookies through the admin API in 8 MiB ranges, as a full scan's executors do "
        f"(none in the first row); {rounds} rounds, modes alternating, medians.",
        "",
        "| mode | add p50 ms | add p99 ms | add p99 ms of each round | adds | read through the bookies MB/s (all "
        "three) | load average |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "The rounds' spread is this shared machine's (other work ran next to the benchmark; a round's p99 can jump "
        "by 10x in any mode): compare the modes within a round, which ran seconds apart, as much as the medians.",
        "",
        "The reads are served from the page cache here (the logs were just written), so the cost the throttle bounds "
        "is the bookies' CPU: reading, sending and the event loop's share of it, on a machine where the readers, the "
        "add client and the three bookies share 2 cores. On a real cluster the executors run on other machines and "
        "the logs come from disk; the throttle then also bounds the disk bandwidth an audit takes.",
    ])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--reader":
        reader(sys.argv[4:], sys.argv[2], float(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 round of 5 s points, 16 MB: docs untouched")
    parser.add_argument("--report-only", action="store_true", help="the docs section from the last results")
    args = parser.parse_args()
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.report_only:
        saved = json.loads(RESULTS.read_text())
        publish("audit-load", section(saved["points"], saved["rounds"], saved["seconds"], saved["megabytes"]),
                saved["points"], write=True)
        return 0
    rounds, seconds, megabytes = (1, 5.0, 16) if args.quick else (3, POINT_S, DATA_MB_PER_BOOKIE)
    points = run(rounds, seconds, megabytes)
    if not args.quick:
        RESULTS.write_text(json.dumps({"rounds": rounds, "seconds": seconds, "megabytes": megabytes,
                                       "points": points}, indent=1) + "\n")
    publish("audit-load", section(points, rounds, seconds, megabytes), points, write=not args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
