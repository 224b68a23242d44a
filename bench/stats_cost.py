"""What recording the latency summaries costs per add: two of our bookies in one run, one with statistics on
(the default) and one with ``enableStatistics=false`` (its recorders record nothing), under the same
pre-encoded 1 KiB v3 adds (bench/add_cpu.py's load generator, fsync on), in rounds that alternate which
bookie goes first. Reported: each bookie's CPU time per add (utime + stime of the process, from /proc) per
round, the median of the paired differences, and the recorder's own cost per call (timeit, in this process)
next to it. Writes its section of docs/benchmarks.md.

    python bench/stats_cost.py                    # 6 rounds x 20,000 adds per bookie
    python bench/stats_cost.py --rounds 10 --adds 40000 --no-docs
    python bench/stats_cost.py --quick            # tiny run for the test suite (no docs)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from add_cpu import cpu, drive, frames
from bookie.stats import NullOpStat, OpStat
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from docs_section import write_section  # bench/ is on sys.path when a bench script runs

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- stats-cost:begin -->", "<!-- stats-cost:end -->"
COMMAND = "python bench/stats_cost.py"
MODES = {"on": True, "off": False}
LINE_BREAK = "  "  # Markdown's


def start(base: Path, zk: ZooKeeperServer, host: int, enabled: bool) -> LocalBookie:
    bookie = plan_bookies(1, base, zk.connect_string, "/stats-cost/ledgers", first_host=host, journalSyncData=True,
                          journalMaxGroupWaitMSec=1, flushInterval=10000, enableStatistics=enabled)[0]
    bookie.start()
    return bookie


def round_of(bookie: LocalBookie, adds: int, size: int, window: int) -> dict[str, float]:
    """One round of ``adds`` on one bookie: its CPU per add and the rate reached."""
    assert bookie.proc is not None
    pid = bookie.proc.pid
    host, port = bookie.bookie_id.rsplit(":", 1)
    requests = frames(adds, size, False)
    before = cpu(pid)
    rate = asyncio.run(drive(host, int(port), requests, window))
    return {"us_per_add": (cpu(pid) - before) / adds * 1e6, "adds_per_s": rate, "load": os.getloadavg()[0]}


def recorder_ns(number: int) -> dict[str, float]:
    """ns per ``record_since`` call of a recorder and of a null one (the general request path's latency
    record; the hot path's adds are recorded in C)."""
    out = {}
    started = time.perf_counter()
    for name, stat in (("OpStat", OpStat()), ("NullOpStat", NullOpStat())):
        record = stat.record_since
        best = min(timeit.repeat(lambda: record(started), number=number, repeat=5))  # noqa: B023 (run at once)
        out[name] = best / number * 1e9
    return out


def run(rounds: int, adds: int, size: int, window: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="stats-cost-") as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zk").start()
        bookies: dict[str, LocalBookie] = {}
        try:
            for i, (mode, enabled) in enumerate(MODES.items()):
                bookies[mode] = start(Path(tmp) / mode, zk, 211 + i, enabled)
            for bookie in bookies.values():  # warm-up: caches, the first entry log, the interpreter
                round_of(bookie, min(adds, 5000), size, window)
            for r in range(rounds):
                order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
                for mode in order:
                    results.append({"round": r, "mode": mode, **round_of(bookies[mode], adds, size, window)})
                    last = results[-1]
                    print(f"round {r} statistics {mode:>3}: {last['us_per_add']:6.1f} us/add, "
                          f"{last['adds_per_s']:7.0f} adds/s, load {last['load']:.1f}", flush=True)
        finally:
            for bookie in bookies.values():
                bookie.stop()
            zk.stop()
    return {"rounds": results, "recorder_ns": recorder_ns(200_000 if adds > 1000 else 2_000)}


def summary(data: dict[str, Any]) -> dict[str, float]:
    by = {(r["round"], r["mode"]): r["us_per_add"] for r in data["rounds"]}
    rounds = sorted({r for r, _ in by})
    diffs = [by[(r, "on")] - by[(r, "off")] for r in rounds]
    on = statistics.median(by[(r, "on")] for r in rounds)
    off = statistics.median(by[(r, "off")] for r in rounds)
    return {"on": on, "off": off, "diff": statistics.median(diffs), "diff_min": min(diffs), "diff_max": max(diffs)}


def section(data: dict[str, Any], args: argparse.Namespace) -> str:
    s = summary(data)
    loads = [r["load"] for r in data["rounds"]]
    ns = data["recorder_ns"]
    rows = "\n".join(f"| {r['round']} | {r['mode']} | {r['us_per_add']:.1f} | {r['adds_per_s']:,.0f} | "
                     f"{r['load']:.1f} |" for r in data["rounds"])
    return f"""{BEGIN}
## Statistics on the add path: recording on vs off

Command: `{COMMAND} --rounds {args.rounds} --adds {args.adds}`{LINE_BREAK}
Machine: {os.cpu_count()} cores, {platform.platform()}; load average {min(loads):.1f} to {max(loads):.1f}
during the rounds (other work shares the machine). Two of our bookies in the same run, the same
{args.size} B v3 adds pre-encoded (window {args.window}, journal fsync on, 1 ms group wait): one with
statistics on (the default), one with `enableStatistics=false`, whose recorders record nothing; rounds
alternate which bookie goes first.

| round | statistics | bookie CPU per add (µs) | adds/s | load |
|---|---|---|---|---|
{rows}

Median CPU per add: {s['on']:.1f} µs with statistics, {s['off']:.1f} µs without; median of the paired
differences {s['diff']:+.1f} µs per add (from {s['diff_min']:+.1f} to {s['diff_max']:+.1f} µs over the rounds).
A plain add's latency is recorded in C on the request hot path (`AddStats`: a bucket count and a sum, merged
into the add's `OpStat` when `/metrics` is read); every other request is recorded by `OpStat.record_since`,
timed here in one process (`timeit`, best of 5): {ns['OpStat']:.0f} ns per call, a null recorder's
{ns['NullOpStat']:.0f} ns (the journal records once per group commit, not per add).
{END}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--adds", type=int, default=20000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.rounds, args.adds, args.no_docs = 2, 500, True
    data = run(args.rounds, args.adds, args.size, args.window)
    s = summary(data)
    print(f"median CPU per add: statistics on {s['on']:.1f} us, off {s['off']:.1f} us, "
          f"paired difference {s['diff']:+.1f} us; recorder {data['recorder_ns']}")
    if not args.no_docs:
        write_section(DOC, section(data, args), BEGIN, END)
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
