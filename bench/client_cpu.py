"""CPU of one append in our Python client: the client side's optimisation loop.

    python bench/client_cpu.py                    # 3 rounds of 8 s, 1 KiB appends, 500 outstanding, 1/1/1
    PYTHONPATH=/path/to/other/checkout/bookie_image python bench/client_cpu.py   # another version
    python bench/client_cpu.py --loop asyncio     # the same client on asyncio's own event loop
    python bench/client_cpu.py --ensemble 3/2/2   # three bookies, each entry written to two
    PYTHONPATH=<other>/bookie_image python bench/client_cpu.py --bookie-pythonpath <this>/bookie_image
                                                  # another version's client against this version's bookies
    python bench/client_cpu.py --quick            # tiny run for the test suite

Local bookies (as many as the ensemble, journal fsync on, 1 ms group wait) and, in this process, our client
(`BookKeeper`, `LedgerHandle.append`) keeping ``--window`` appends outstanding on one ledger, on uvloop as our
client's commands run it (``--loop asyncio``: on asyncio's default loop). Reported: the rate; this process's
CPU time per acknowledged append (``time.process_time()``: the client, and nothing of the bookie, which is another
process); how busy that kept the client (CPU seconds per second: well below 1 when the rate is bound by
waiting for the bookie rather than by the client's CPU); and the appends' latency, p50 and p99. Nothing is
written to docs: docs/benchmarks.md quotes its before/after numbers by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import add_bench
from appends import AppendWindow
from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.protocol.entry import DigestType
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer


@dataclass
class Round:
    acknowledged: int
    elapsed_s: float
    cpu_s: float  # this process's CPU time: the client's, none of the bookie's
    latencies_s: list[float]  # append to acknowledgement, sorted


async def one_round(lh: Any, payload: bytes, window: int, seconds: float) -> Round:
    """Appends with ``window`` outstanding for ``seconds``."""
    appends = AppendWindow(window)
    cpu0, started = time.process_time(), time.monotonic()
    while time.monotonic() - started < seconds:
        await appends.append(lh, payload)
    await appends.drain()
    return Round(len(appends.latencies), time.monotonic() - started, time.process_time() - cpu0,
                 sorted(appends.latencies))


async def rounds(zk_connect: str, root: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    config = ClientConfig(zk_servers=zk_connect, ledgers_root=root, speculative_read_timeout_s=0)
    async with BookKeeper(config) as bk:
        lh = await bk.create_ledger(*args.ensemble, digest_type=DigestType.CRC32, password=b"bench")
        payload = b"c" * args.size
        await one_round(lh, payload, args.window, min(args.seconds, 2.0))  # warm-up, not reported
        for r in range(args.rounds):
            measured = await one_round(lh, payload, args.window, args.seconds)
            n, lat = measured.acknowledged, measured.latencies_s
            if n == 0:
                raise RuntimeError("no append was acknowledged")
            result = {"round": r, "appends_per_s": n / measured.elapsed_s,
                      "client_us_per_append": measured.cpu_s / n * 1e6,
                      "client_busy": measured.cpu_s / measured.elapsed_s,
                      "p50_ms": lat[n // 2] * 1e3, "p99_ms": lat[min(n - 1, int(n * 0.99))] * 1e3}
            print(f"round {r}: {result['appends_per_s']:8.0f} appends/s, client CPU "
                  f"{result['client_us_per_append']:5.1f} us/append (busy {result['client_busy']:.2f} of a core), "
                  f"latency p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms", flush=True)
            results.append(result)
        await lh.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--ensemble", type=lambda v: tuple(int(x) for x in v.split("/")), default=(1, 1, 1),
                        help="E/W/A of the ledger (E bookies are started)")
    parser.add_argument("--bookie-pythonpath", default=None,
                        help="PYTHONPATH of the bookie processes (the client's is this process's own): one "
                             "version's client against another's bookies")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.seconds, args.rounds, args.window = 0.5, 1, 20
    with tempfile.TemporaryDirectory() as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zk").start()
        root = f"/client-cpu-{uuid.uuid4().hex[:8]}/ledgers"
        if args.bookie_pythonpath is not None:
            os.environ["PYTHONPATH"] = args.bookie_pythonpath  # inherited by the bookie processes only
        bookies = [add_bench.start_ours(Path(tmp) / f"ours-{i}", zk, root, first_host=201 + i)
                   for i in range(args.ensemble[0])]
        try:
            run = uvloop.run if args.loop == "uvloop" else asyncio.run
            results = run(rounds(zk.connect_string, root, args))
        finally:
            for bookie in bookies:
                bookie.stop()
            zk.stop()
    best = min(results, key=lambda x: x["client_us_per_append"])
    print(f"best: {best['client_us_per_append']:.1f} us/append")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
