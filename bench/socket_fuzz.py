"""Socket-level fuzzing of a real bookie process: generated and mutated v2/v3 frames over many connections.

    python bench/socket_fuzz.py --frames 1000000      # the documented run (docs/limits.md, "Socket fuzzing")
    python bench/socket_fuzz.py --quick               # seconds-long smoke run (used by the test suite)

One ZooKeeper and one bookie are started on a fresh directory. Entries are written first with a correct
client; then ``--connections`` concurrent workers open connection after connection and send bursts of
frames: valid requests of every kind (adds, reads, fencing and long-poll reads, LAC, force, info, list,
batch reads) with random ids, keys and flags, and mutations of them (bit flips, truncations, random
lengths, random bytes, half frames followed by a close), while never reading some sockets (slow readers).
The bookie's RSS (``VmRSS``) is sampled throughout. Afterwards a correct client must read every entry
written first, byte-identical, and add a new one: the bookie still serves and has lost nothing.
The last output line is the JSON result. ``frames`` counts frames sent; a connection's frames after a mutated
one that the bookie refuses are not executed (the mutated frame ends each burst on half of the connections).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import struct
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bookie.protocol import client_codec, codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie_fleet.local_bookies import plan_bookies
from bookie_fleet.zookeeper import ZooKeeperServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bookie_fleet.processes import stop_on_sigterm
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

from tests.support.raw_client import RawConnection, entry

BURST = 100


def _wire(rng: random.Random) -> m.Wire:
    return m.Wire.v3(rng.randrange(2**63), rng.random() < 0.1) if rng.random() < 0.5 else m.Wire.v2()


def _ids(rng: random.Random) -> tuple[int, int]:
    ledger = rng.choice([rng.randrange(1, 1000), -rng.randrange(1, 10), 0, 2**63 - 1])
    return ledger, rng.choice([rng.randrange(0, 50), -1, -2, -0x2000, 2**40])


def _request(rng: random.Random) -> Any:
    w = _wire(rng)
    ledger, entry_id = _ids(rng)
    key = rng.choice([b"", b"k", rng.randbytes(20)])
    kind = rng.randrange(8)
    if kind == 0:
        return m.AddRequest(w, ledger, entry_id, key or b"k", entry(ledger, entry_id, rng.randbytes(rng.randrange(64))),
                            recovery=rng.random() < 0.1)
    if kind == 1:
        return m.ReadRequest(w, ledger, entry_id, fence=rng.random() < 0.1, master_key=key or None)
    if kind == 2 and w.version == 3:
        return m.ReadRequest(w, ledger, entry_id, previous_lac=rng.randrange(-1, 100),
                             timeout_ms=rng.choice([0, 10, 1000, 2**31 - 1]), piggyback=rng.random() < 0.5)
    if kind == 3:
        return m.ReadLacRequest(w, ledger)
    if kind == 4 and w.version == 3:
        return m.WriteLacRequest(w, ledger, entry_id, key, rng.randbytes(rng.randrange(64)))
    if kind == 5 and w.version == 3:
        return m.ForceLedgerRequest(w, ledger)
    if kind == 6 and w.version == 3:
        return m.GetListOfEntriesOfLedgerRequest(w, ledger)
    if kind == 7 and w.version == 2:
        return m.BatchReadRequest(w, ledger, entry_id, rng.randrange(2**31), rng.randrange(-1, 100),
                                  rng.randrange(-1, 10**7), master_key=key or None)
    return m.GetBookieInfoRequest(m.Wire.v3(rng.randrange(2**63)), rng.randrange(4))


def _mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    how = rng.randrange(5)
    if how == 0:
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif how == 1:
        del data[rng.randrange(4, len(data)):]
        data[:4] = struct.pack(">i", len(data) - 4)  # a consistent length for a truncated body
    elif how == 2:
        data[:4] = struct.pack(">i", rng.choice([0, -1, 1, 2**31 - 1, rng.randrange(10**7)]))
    elif how == 3:
        body = rng.randbytes(rng.randrange(1, 200))
        data = bytearray(struct.pack(">i", len(body)) + body)
    else:
        pos = rng.randrange(4, len(data))
        data[pos:pos] = rng.randbytes(rng.randrange(1, 16))
        data[:4] = struct.pack(">i", len(data) - 4)
    return bytes(data)


def _frame(rng: random.Random) -> bytes:
    """A well-formed frame: random ids, keys and flags, but decodable (mutations are applied separately)."""
    while True:
        try:
            frame = client_codec.encode_request(_request(rng))
            codec.decode_request(memoryview(frame)[4:])
            return frame
        except Exception:  # a combination one of the codecs refuses (such as an id out of v2's range)
            continue


class Stats:
    def __init__(self) -> None:
        self.frames = 0
        self.connections = 0
        self.refused_connections = 0
        self.rss_samples: list[int] = []


async def _worker(host: str, port: int, budget: int, seed: int, stats: Stats) -> None:
    rng = random.Random(seed)
    while stats.frames < budget:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (OSError, TimeoutError):
            stats.refused_connections += 1
            await asyncio.sleep(0.05)
            continue
        stats.connections += 1
        # Generated frames, then (on half of the connections) one mutated frame, which usually ends the
        # connection: everything before it is decoded and executed.
        frames = [_frame(rng) for _ in range(BURST)]
        if rng.random() < 0.5:
            frames[-1] = _mutate(frames[-1], rng)
        elif rng.random() < 0.1:
            frames[-1] = frames[-1][:max(1, len(frames[-1]) // 2)]  # a half frame, then the close
        stats.frames += len(frames)
        slow_reader = rng.random() < 0.05
        try:
            writer.write(b"".join(frames))
            await asyncio.wait_for(writer.drain(), 10)
            if not slow_reader:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reader.read(1 << 20), 0.05)
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _counters(http_url: str) -> dict[str, float]:
    """The bookie's own counts: what it executed and which limits it hit."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{http_url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    return {s.name.removeprefix("bookie_").removesuffix("_total"): s.value
            for f in text_string_to_metric_families(text) for s in f.samples
            if s.name.endswith("_total") and (s.name.startswith("bookie_limit_") or s.name in (
                "bookie_adds_total", "bookie_reads_total"))}


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def _sample(pid: int, stats: Stats, done: asyncio.Event) -> None:
    while not done.is_set():
        stats.rss_samples.append(_rss(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 0.5)


async def _seed(bookie_id: str, rng: random.Random) -> dict[tuple[int, int], bytes]:
    written: dict[tuple[int, int], bytes] = {}
    async with await RawConnection.open(bookie_id) as conn:
        for ledger in (rng.randrange(10**6, 2**40) for _ in range(4)):
            for i in range(20):
                body = entry(ledger, i, rng.randbytes(rng.choice([10, 1000, 50_000])))
                response = await conn.add(ledger, i, body=body)
                assert response.status == StatusCode.EOK, response
                written[(ledger, i)] = body
    return written


async def _verify(bookie_id: str, written: dict[tuple[int, int], bytes]) -> bool:
    async with await RawConnection.open(bookie_id) as conn:
        for (ledger, entry_id), body in written.items():
            response = await conn.read(ledger, entry_id)
            if response.status != StatusCode.EOK or bytes(response.body) != body:
                return False
        ledger = random.randrange(10**6, 2**40)
        return bool((await conn.add(ledger, 0)).status == StatusCode.EOK)


async def fuzz(bookie: Any, frames: int, connections: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    written = await _seed(bookie.bookie_id, rng)
    pid = bookie.proc.pid
    stats = Stats()
    rss_before = _rss(pid)
    done = asyncio.Event()
    sampler = asyncio.create_task(_sample(pid, stats, done))
    host, port = bookie.bookie_id.rsplit(":", 1)
    started = time.monotonic()
    await asyncio.gather(*(_worker(host, int(port), frames, seed * 1000 + i, stats) for i in range(connections)))
    elapsed = time.monotonic() - started
    done.set()
    await sampler
    served = await _verify(bookie.bookie_id, written)
    counters = await asyncio.to_thread(_counters, bookie.http_url)
    return {"bookie_counters": counters, "frames": stats.frames, "connections": stats.connections,
            "workers": connections,
            "refused_connections": stats.refused_connections, "seconds": round(elapsed, 1),
            "rss_before_mib": round(rss_before / 2**20, 1), "rss_max_mib": round(max(stats.rss_samples) / 2**20, 1),
            "rss_after_mib": round(_rss(pid) / 2**20, 1), "alive": bookie.proc.poll() is None,
            "served_and_nothing_lost": served}


def run(frames: int, connections: int, seed: int, workdir: Path) -> dict[str, Any]:
    zk = ZooKeeperServer(workdir / "zk").start()
    try:
        bookie = plan_bookies(1, workdir / "bookie", zk.connect_string, "/fuzz/ledgers", first_host=203,
                              partialFrameTimeoutMs=2000, maxLongPollTimeoutMs=2000)[0]
        bookie.start()
        try:
            return asyncio.run(fuzz(bookie, frames, connections, seed))
        finally:
            bookie.stop()
    finally:
        zk.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--connections", type=int, default=32, help="concurrent workers")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny run for the test suite")
    add_workdir_argument(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    frames = 5_000 if args.quick else args.frames
    with run_directory(args.workdir, "socket-fuzz-") as tmp:
        result = run(frames, args.connections, args.seed, tmp)
    print(json.dumps(result))
    return 0 if result["alive"] and result["served_and_nothing_lost"] else 1


if __name__ == "__main__":
    sys.exit(main())
