"""CPU cost of one add in our bookie: the optimisation loop's measure, steadier than throughput on a shared machine.

    python bench/add_cpu.py                       # 3 x 40,000 pre-encoded 1 KiB v3 adds, fsync on
    python bench/add_cpu.py --protocol v2 --size 100
    PYTHONPATH=/path/to/other/checkout/bookie_image python bench/add_cpu.py   # the same, for another version
    python bench/add_cpu.py --quick               # tiny run for the test suite
    python bench/add_cpu.py --impl java --size 16384   # the same load on one Apache BookKeeper bookie

One bookie (journal fsync on, 1 ms group wait) and a load generator that only writes pre-encoded add frames
and counts response frames, so that the client costs little. Reported: the bookie's CPU time per add (utime +
stime of the whole process, and of its event-loop thread alone, from /proc), and the rate reached. Nothing
is written to docs: docs/benchmarks.md quotes its before/after numbers by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import add_bench
from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.entry import package_entry
from bookie_fleet.processes import stop_on_sigterm
from bookie_fleet.zookeeper import ZooKeeperServer
from peer import add_peer_argument, chosen_peer

STALL_S = 60.0  # a bookie that stops answering fails the run instead of hanging it


def frames(count: int, size: int, v2: bool) -> list[bytes]:
    payload = os.urandom(size)
    ledgers = [random.randrange(1, 2**40) for _ in range(8)]
    next_entry = dict.fromkeys(ledgers, 0)
    out = []
    for i in range(count):
        ledger = ledgers[i % len(ledgers)]
        entry_id = next_entry[ledger]
        next_entry[ledger] += 1
        body = package_entry(add_bench.DIGEST, ledger, entry_id, entry_id - 1, size * (entry_id + 1), payload)
        wire = m.Wire.v2() if v2 else m.Wire.v3(i + 1)
        out.append(client_codec.encode_request(m.AddRequest(wire, ledger, entry_id, add_bench.KEY, body)))
    return out


async def drive(host: str, port: int, requests: list[bytes], window: int) -> float:
    """Keep ``window`` adds outstanding; returns adds/s. Responses are only counted (length prefixes)."""
    reader, writer = await asyncio.open_connection(host, port)
    sent = received = 0
    for _ in range(min(window, len(requests))):
        writer.write(requests[sent])
        sent += 1
    pending = b""
    started = time.perf_counter()
    while received < len(requests):
        try:
            data = await asyncio.wait_for(reader.read(1 << 20), STALL_S)
        except TimeoutError:
            raise RuntimeError(f"no answer from the bookie for {STALL_S:.0f} s ({received} of {len(requests)} "
                               f"adds answered): see its log") from None
        if not data:
            raise RuntimeError("bookie closed the connection")
        pending += data
        offset = 0
        while len(pending) - offset >= 4:
            (length,) = struct.unpack_from(">i", pending, offset)
            if len(pending) - offset < 4 + length:
                break
            offset += 4 + length
            received += 1
            if sent < len(requests):
                writer.write(requests[sent])
                sent += 1
        pending = pending[offset:]
    elapsed = time.perf_counter() - started
    writer.close()
    return len(requests) / elapsed


cpu = add_bench.process_cpu_s


def start_py_spy(pid: int, output: str) -> subprocess.Popen[bytes]:
    """py-spy on the bookie for 2 s (non-blocking sampling, all threads)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("py-spy not found: ./scripts/bootstrap installs it (requirements.lock)")
    fmt = "raw" if output.endswith(".txt") else "flamegraph"  # raw: collapsed stacks, for scripts to rank
    proc = subprocess.Popen([spy, "record", "--pid", str(pid), "--duration", "2", "--rate", "250", "--threads",
                             "--nonblocking", "--format", fmt, "--output", output],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(0.3)
    return proc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adds", type=int, default=40000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--protocol", choices=("v3", "v2"), default="v3")
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--impl", choices=("ours", "java"), default="ours",
                        help="the bookie driven: ours, or Apache BookKeeper's at bench/add_bench.py's production "
                             "settings (its event-loop figure is then its main thread's, meaningless)")
    parser.add_argument("--flamegraph", default=None,
                        help="py-spy profile of the bookie during the second round (pip-installs py-spy): a flame "
                             "graph (SVG), or collapsed stacks when the name ends in .txt")
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    peer = chosen_peer(parser, args)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.adds, args.rounds = 500, 1
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zk").start()
        start = partial(add_bench.start_java, peer=peer) if args.impl == "java" else add_bench.start_ours
        bookie = start(Path(tmp) / args.impl, zk, f"/{args.impl}/ledgers")
        try:
            assert bookie.proc is not None
            pid = bookie.proc.pid
            host, port = bookie.bookie_id.rsplit(":", 1)
            asyncio.run(drive(host, int(port), frames(min(args.adds, 5000), args.size, args.protocol == "v2"),
                              args.window))  # warm-up
            for r in range(args.rounds):
                requests = frames(args.adds, args.size, args.protocol == "v2")
                spy = start_py_spy(pid, args.flamegraph) if args.flamegraph and r == min(1, args.rounds - 1) else None
                process0, loop0 = cpu(pid), cpu(pid, pid)
                rate = asyncio.run(drive(host, int(port), requests, args.window))
                if spy is not None:
                    spy.communicate(timeout=60)
                process_us = (cpu(pid) - process0) / args.adds * 1e6
                loop_us = (cpu(pid, pid) - loop0) / args.adds * 1e6
                results.append({"round": r, "adds_per_s": rate, "process_us_per_add": process_us,
                                "loop_us_per_add": loop_us, "load": os.getloadavg()[0]})
                print(f"round {r}: {rate:8.0f} adds/s, bookie CPU {process_us:5.1f} us/add "
                      f"(event loop thread {loop_us:5.1f} us), load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            bookie.stop()
            zk.stop()
    best = min(results, key=lambda x: x["process_us_per_add"])
    print(f"best: {best['process_us_per_add']:.1f} us/add ({best['loop_us_per_add']:.1f} us on the event loop)")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
