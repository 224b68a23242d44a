"""Pre-authentication flood: what a bookie's memory grows by when clients that never send a complete request
hold connections with part of a large frame each, and one client pipelines reads and never reads its answers.

    python bench/preauth_flood.py          # 150 connections x 3 MiB; rewrites its section of docs/limits.md
    python bench/preauth_flood.py --quick  # 20 connections x 1 MiB, docs untouched

One of our bookies (ZooKeeper beside it), two runs: the defaults (``unauthenticatedBufferBytes``,
``unauthenticatedTimeoutMs``, ``maxConnections``, ``maxReadsInProgressLimit``: docs/limits.md), then those four
off (0), as before they had defaults. The bookie's RSS (``VmRSS`` of its process) is sampled every 50 ms for the
whole flood; the peak minus the RSS before it is the growth reported.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.processes import call_blocking
from bookie_fleet.zookeeper import ZooKeeperServer
from docs_section import publish  # bench/ is on sys.path when a bench script runs
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

MIB = 1024 * 1024
LIMITS = Path(__file__).resolve().parents[1] / "docs" / "limits.md"
BOUNDS_OFF: dict[str, Any] = {"unauthenticatedBufferBytes": 0, "unauthenticatedTimeoutMs": 0, "maxConnections": 0,
              "maxReadsInProgressLimit": 0}
ENTRY = 32 * 1024
ENTRIES = 16
READS = 10_000
DECLARED = 5 * MIB - 64  # a legal frame length, just under nettyMaxFrameSizeBytes


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}: the bookie exited")


def write_entries(address: tuple[str, int], ledger: int) -> None:
    """v2 adds (our bookie stores the body as sent), then each entry read once, as a normal client would."""
    with socket.create_connection(address, timeout=30) as sock:
        for i in range(ENTRIES):
            body = struct.pack(">qq", ledger, i) + random.randbytes(ENTRY)
            call_blocking(sock, m.AddRequest(m.Wire.v2(), ledger, i, b"preauth-flood-bench!", body))
        for i in range(ENTRIES):
            call_blocking(sock, m.ReadRequest(m.Wire.v2(), ledger, i))


def hold_partial_frame(address: tuple[str, int], sent: int, held: list[socket.socket]) -> None:
    try:
        sock = socket.create_connection(address, timeout=30)
        held.append(sock)
        sock.sendall(struct.pack(">i", DECLARED) + random.randbytes(sent))
    except OSError:
        pass  # refused or closed by the bookie: a bound at work


def never_read(address: tuple[str, int], ledger: int, held: list[socket.socket]) -> None:
    requests = b"".join(client_codec.encode_request(m.ReadRequest(m.Wire.v2(), ledger, i % ENTRIES))
                        for i in range(READS))
    try:
        sock = socket.create_connection(address, timeout=30)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        held.append(sock)
        sock.sendall(requests)
    except OSError:
        pass


def flood(bookie: LocalBookie, connections: int, sent: int) -> dict[str, Any]:
    assert bookie.proc is not None
    host, port = bookie.bookie_id.rsplit(":", 1)
    address, ledger = (host, int(port)), random.randrange(1, 2**40)
    write_entries(address, ledger)
    baseline = peak = rss(bookie.proc.pid)
    held: list[socket.socket] = []
    threads = [threading.Thread(target=never_read, args=(address, ledger, held))]
    threads += [threading.Thread(target=hold_partial_frame, args=(address, sent, held)) for _ in range(connections)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(t.is_alive() for t in threads):
            peak = max(peak, rss(bookie.proc.pid))
            time.sleep(0.05)
        for _ in range(40):
            peak = max(peak, rss(bookie.proc.pid))
            time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
        for t in threads:
            t.join(30)
    return {"baseline_mib": baseline / MIB, "growth_mib": (peak - baseline) / MIB,
            "sent_mib": connections * sent / MIB}


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    zk = ZooKeeperServer(tmp / "zk").start()
    results: dict[str, Any] = {}
    try:
        for mode, overrides in (("defaults", {}), ("bounds off", BOUNDS_OFF)):
            root = f"/bench-preauth-{len(results)}/ledgers"
            (bookie,) = plan_bookies(1, tmp / f"bookie{len(results)}", zk.connect_string, root, first_host=62,
                                     dbStorage_readAheadCacheMaxSizeMb=0, **overrides)
            try:
                bookie.start()
                results[mode] = flood(bookie, args.connections, args.sent_mib * MIB)
            finally:
                bookie.stop()
    finally:
        zk.stop()
    return results


def table(res: dict[str, Any], args: argparse.Namespace, command: str) -> str:
    rows = [f"| {mode} | {r['sent_mib']:.0f} MiB | {r['growth_mib']:.0f} MiB |" for mode, r in res.items()]
    return "\n".join([
        "### Measured: a pre-authentication flood",
        "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}; one bookie. {args.connections} connections each "
        f"send a frame header declaring {DECLARED} bytes and {args.sent_mib} MiB of it, then nothing; one more "
        f"pipelines {READS} v2 reads of {ENTRY // 1024} KiB entries and never reads an answer.",
        "",
        "| configuration | partial frames sent | bookie RSS growth (peak) |",
        "|---|---|---|",
        *rows,
        "",
        "\"bounds off\": `unauthenticatedBufferBytes`, `unauthenticatedTimeoutMs`, `maxConnections` and "
        "`maxReadsInProgressLimit` at 0. `tests/bookie/test_preauth_flood_memory_bounded.py` asserts the bound "
        "with the defaults.",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20 connections x 1 MiB; docs untouched")
    parser.add_argument("--connections", type=int, default=150)
    parser.add_argument("--sent-mib", type=int, default=3)
    add_workdir_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.connections, args.sent_mib = 20, 1
    with run_directory(args.workdir, "preauth-flood-") as tmp:
        res = run(args, tmp)
    command = "python bench/preauth_flood.py" + (" --quick" if args.quick else "")
    publish("preauth-flood", table(res, args, command), res, write=not args.quick, doc=LIMITS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
