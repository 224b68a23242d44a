"""What the inspector (``bookie inspect serve``) costs the Apache BookKeeper bookies it runs beside: their write
throughput and add latency under BenchThroughputLatency with and without inspectors explaining their disks and an
audit reading every entry log through them, same bookies, same run; and the inspectors' own CPU and bytes read.

    python bench/inspector_bench.py            # 3 rounds; rewrites its section of docs/benchmarks.md
    python bench/inspector_bench.py --quick    # tiny run, docs untouched
    python bench/inspector_bench.py --report-only   # the docs section again from bench/inspector_results.json

Three Apache BookKeeper bookies (the release of ``--peer``, bench/peer.py) at their production settings
(bench/run_all.py: production JVM options, DbLedgerStorage, journal fsync on), 64 MB entry logs, filled first
so the inspectors have finalized logs to read.
Each point runs BenchThroughputLatency (1 KiB entries, 3/2/2, at most ``THROTTLE`` adds outstanding) for
``POINT_S`` seconds. In the "inspectors" mode an inspector beside each bookie serves an explain request every
``EXPLAIN_EVERY_S`` seconds and ``READERS`` reader processes fetch every entry log through the inspectors in 8 MiB
ranges, as a full audit's executors do, at the inspectors' read rate (``READ_RATE`` bytes/s each, the operator's
default ``spec.inspector.readRateBytes``). The inspectors run all the time in that mode, their first look (every
log read once) before the point starts. Modes alternate their order every round; the table shows medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

from bookie_fleet.processes import stop_on_sigterm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import run_all  # noqa: E402  (bench/ on the path)
from audit_load_bench import reader  # noqa: E402  (a full scan's reads, through the inspectors here)
from docs_section import publish  # noqa: E402
from peer import EARLIER_RUNS_PEER, Peer, add_peer_argument, chosen_peer  # noqa: E402

RESULTS = REPO / "bench" / "inspector_results.json"
POINT_S = 30
THROTTLE = 2000
ENTRY = 1024
FILL_S = 40
EXPLAIN_EVERY_S = 2.0
READERS = 2
READ_RATE = 20_000_000
LOG_SIZE = 64 * 1024 * 1024
MODES = ("no inspector", "inspectors: explain every 2 s and an audit reading through them")
TOKEN = "inspector-bench-token-0123456789abcdef"


def explain_loop(inspectors: list[Any], stop: threading.Event, answered: list[int]) -> None:
    while not stop.wait(EXPLAIN_EVERY_S):
        for i in inspectors:
            request = urllib.request.Request(f"{i.http_url}/api/v1/bookie/entry_logs",
                                             headers={"Authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(request, timeout=60) as r:
                json.loads(r.read())
            answered[0] += 1


def read_bytes(pids: list[int]) -> int:
    """Bytes the processes read from storage (``/proc/<pid>/io`` read_bytes; page-cache hits are not counted)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/io").read_text().splitlines():
                if line.startswith("read_bytes:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def point(cluster: Any, inspectors: list[Any], mode: str, token_file: Path, seconds: int,
          work: Path) -> dict[str, Any]:
    stop = threading.Event()
    answered = [0]
    procs: list[subprocess.Popen[str]] = []
    explainer = None
    if mode != MODES[0]:
        explainer = threading.Thread(target=explain_loop, args=(inspectors, stop, answered), daemon=True)
        explainer.start()
        urls = [f"bookie+{i.http_url}" for i in inspectors]
        procs = [subprocess.Popen([sys.executable, __file__, "--reader", str(token_file), str(seconds), *urls],
                                  stdout=subprocess.PIPE, text=True) for _ in range(READERS)]
    pids = [i.proc.pid for i in inspectors if i.proc is not None] if mode != MODES[0] else []
    bookie_cpu, inspector_cpu, inspector_io = (run_all.cpu_seconds(cluster.pids), run_all.cpu_seconds(pids),
                                               read_bytes(pids))
    load = os.getloadavg()[0]
    ops, p50, p99, count = run_all.run_btl(cluster, ENTRY, (3, 2, 2), False, seconds, THROTTLE, work)
    bookie_cpu = run_all.cpu_seconds(cluster.pids) - bookie_cpu
    inspector_cpu = run_all.cpu_seconds(pids) - inspector_cpu
    inspector_io = read_bytes(pids) - inspector_io
    stop.set()
    if explainer is not None:
        explainer.join(timeout=120)
    through = 0
    for p in procs:
        out, _ = p.communicate(timeout=180)
        through += json.loads(out.strip().splitlines()[-1])["bytes"]
    return {"mode": mode, "ops_per_s": ops, "p50_ms": p50, "p99_ms": p99, "adds": count,
            "bookie_cpu_s_per_100k": 1e5 * bookie_cpu / max(1, count), "inspector_cpu_s": inspector_cpu,
            "inspector_cpu_cores": inspector_cpu / seconds, "inspector_disk_mb": inspector_io / 1e6,
            "read_through_mb_s": through / 1e6 / seconds, "explains": answered[0], "load": load}


def run(rounds: int, seconds: int, fill_s: int, peer: Peer) -> list[dict[str, Any]]:
    from bookie_fleet.inspectors import plan_inspectors
    from bookie_fleet.processes import start_all, stop_all
    from bookie_fleet.zookeeper import ZooKeeperServer

    with tempfile.TemporaryDirectory(prefix="inspector-bench-") as tmp:
        work = Path(tmp)
        zk = ZooKeeperServer(work / "zk").start()
        started: dict[str, Any] = {}
        inspectors: list[Any] = []
        try:
            cluster = run_all.start_clusters(work, zk.connect_string, 3, ("java",), started,
                                             peer=peer)["java"]
            for b in cluster.bookies:   # entry logs that roll within the run
                b.overrides["logSizeLimit"] = LOG_SIZE
                b.restart()
            run_all.run_btl(cluster, 16 * 1024, (3, 2, 2), False, fill_s, THROTTLE, work)  # logs to inspect
            inspectors = plan_inspectors(cluster.bookies, work / "inspectors", zk.connect_string, cluster.root,
                                         first_host=241, admin_token=TOKEN, compactionReadRateByBytes=READ_RATE,
                                         httpEntryLogReadRateByBytes=READ_RATE, gcWaitTime=60_000)
            token_file = work / "token"
            token_file.write_text(TOKEN + "\n")
            points = []
            for r in range(rounds):
                order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
                for mode in order:
                    if mode == MODES[0]:
                        stop_all(inspectors)
                    else:
                        start_all(inspectors, 120)
                    p = point(cluster, inspectors, mode, token_file, seconds, work)
                    p["round"] = r
                    print(json.dumps(p), flush=True)
                    points.append(p)
            return points
        finally:
            stop_all(inspectors)
            run_all.stop_clusters(started)
            zk.stop()


def section(points: list[dict[str, Any]], rounds: int, seconds: int, version: str) -> str:
    def med(mode: str, key: str) -> float:
        return statistics.median(p[key] for p in points if p["mode"] == mode)

    base, with_inspectors = MODES
    rows = []
    for mode in MODES:
        per_round = ", ".join(f"{p['p99_ms']:.1f}" for p in sorted((p for p in points if p["mode"] == mode),
                                                                   key=lambda p: p["round"]))
        rows.append(f"| {mode} | {med(mode, 'ops_per_s'):.0f} | {med(mode, 'p50_ms'):.2f} | {med(mode, 'p99_ms'):.2f}"
                    f" | {per_round} | {med(mode, 'bookie_cpu_s_per_100k'):.2f} | "
                    f"{med(mode, 'inspector_cpu_cores'):.3f} | {med(mode, 'inspector_disk_mb'):.1f} | "
                    f"{med(mode, 'read_through_mb_s'):.1f} | {med(mode, 'explains'):.0f} | {med(mode, 'load'):.1f} |")
    # The two modes of a round ran seconds apart: their ratio is the comparison, the rounds' spread the noise.
    pairs = [({p["mode"]: p for p in points if p["round"] == r}) for r in sorted({p["round"] for p in points})]
    ops_ratios = [pair[with_inspectors]["ops_per_s"] / pair[base]["ops_per_s"] for pair in pairs]
    p99_ratios = [pair[with_inspectors]["p99_ms"] / pair[base]["p99_ms"] for pair in pairs]
    ratio_ops, ratio_p99 = statistics.median(ops_ratios), statistics.median(p99_ratios)
    each = ", ".join(f"{o:.2f}x / {q:.2f}x" for o, q in zip(ops_ratios, p99_ratios, strict=True))
    return "\n".join([
        "## The inspector beside a loaded Apache BookKeeper bookie",
        "",
        "Command: `python bench/inspector_bench.py`  ",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}.  ",
        f"Load: three Apache BookKeeper {version} bookies at their production settings (DbLedgerStorage, journal fsync "
        f"on, {LOG_SIZE >> 20} MB entry logs, filled first); BenchThroughputLatency, {ENTRY} B entries, 3/2/2, at "
        f"most {THROTTLE} outstanding, {seconds} s per point; with inspectors: one beside each bookie answering an "
        f"explain request every {EXPLAIN_EVERY_S:.0f} s, and {READERS} reader processes fetching every entry log "
        f"through them (as a full audit does), each inspector's reads paced at {READ_RATE / 1e6:.0f} MB/s; "
        f"{rounds} rounds, modes alternating, medians.",
        "",
        "| mode | adds/s | p50 ms | p99 ms | p99 ms of each round | bookie CPU s per 100k adds | inspectors' CPU "
        "(cores, all three) | inspectors' disk reads MB | read through them MB/s | explain answers | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"With the inspectors at work, the bookies' throughput is {ratio_ops:.2f}x and their p99 {ratio_p99:.2f}x "
        f"what they are without (medians of each round's ratio, the two modes seconds apart; each round's "
        f"throughput / p99 ratio: {each}). The medians of the table's columns mix rounds: the rounds' spread is "
        "this shared machine's. The inspectors' disk reads are what missed the page cache: on "
        "this machine the logs were just written, so most reads are served from memory and the cost that shows "
        "is CPU on the two cores the bookies, the benchmark client, the inspectors and the readers share; on a "
        "bookie's own machine the read rate also bounds the disk bandwidth the inspector takes.",
    ])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--reader":
        reader(sys.argv[4:], sys.argv[2], float(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 round of 8 s points: docs untouched")
    parser.add_argument("--report-only", action="store_true", help="the docs section from the last results")
    add_peer_argument(parser)
    args = parser.parse_args()
    if args.report_only:
        saved = json.loads(RESULTS.read_text())
        publish("inspector", section(saved["points"], saved["rounds"], saved["seconds"],
                                     saved.get("peer", EARLIER_RUNS_PEER)),
                saved["points"], write=True)
        return 0
    run_all.prepare_interpreter()
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    rounds, seconds, fill_s = (1, 8, 8) if args.quick else (3, POINT_S, FILL_S)
    peer = chosen_peer(parser, args)
    points = run(rounds, seconds, fill_s, peer)
    if not args.quick:
        RESULTS.write_text(json.dumps({"rounds": rounds, "seconds": seconds, "peer": peer.version, "points": points},
                                      indent=1) + "\n")
    publish("inspector", section(points, rounds, seconds, peer.version), points, write=not args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
