"""Catch-up reads from disk: a backlog read from the start once none of it is in memory, ours against Apache
BookKeeper's bookies (the release of ``--peer``, bench/peer.py), same run, alternating.

    python bench/catchup_disk_bench.py                 # 3 rounds, 3 bookies each, a 100,000-entry 1 KiB backlog
    python bench/catchup_disk_bench.py --bookies 1 --entries 50000 --size 4096
    python bench/catchup_disk_bench.py --quick         # tiny run for the test suite

Both clusters run as bench/run_all.py starts them: Apache BookKeeper's bookies at its production JVM settings
with DbLedgerStorage and its own defaults, ours as the image runs it, journal fsync on; each with the read-ahead
and read cache it ships with (neither is configured here). Each round, for each implementation in turn (the
order alternates round after round): our client writes a warm-up ledger and the backlog (ensemble = bookies,
write and ack quorum 2, or 1/1/1 on one bookie); the bookies restart, so that every entry is in an entry log and
no cache of theirs holds it; the page cache is dropped for every file of the bookies' data directories
(``fdatasync`` then ``posix_fadvise(POSIX_FADV_DONTNEED)``, which needs no privilege); the warm-up ledger is read
(the JVM's read path compiled, our bookie's imports done), the page cache dropped again, and the backlog read
from the start by our client, 100 entries per ``read`` as run_all.py's catch-up point does.

Reported per reading: entries/s and MB/s, the bookies' CPU per entry (utime + stime of every bookie process), and
two proofs that the reading came from disk: the bytes of the bookies' files still in the page cache right after
the drop (``cachestat``), and the bytes the bookie processes read from the block device during the reading
(``read_bytes`` of /proc/<pid>/io, which counts only reads that reach storage). Nothing is written to docs:
docs/benchmarks.md quotes the table by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_all
from bookie_fleet.processes import stop_on_sigterm
from peer import add_peer_argument, chosen_peer

READ_BATCH = 100  # entries per read, as run_all.py's catch-up point


def _files(directories: list[Path]) -> list[Path]:
    return [p for d in directories for p in d.rglob("*") if p.is_file()]


def drop_page_cache(directories: list[Path]) -> tuple[int, int]:
    """(bytes of the files cached before, bytes still cached after): every file under ``directories`` synced and
    dropped from the page cache. Dirty pages cannot be dropped, hence the sync first; pages a process has mapped
    stay, which the "after" figure would show."""
    before = after = 0
    for path in _files(directories):
        with contextlib.suppress(FileNotFoundError):  # a bookie may delete a file meanwhile (an old journal)
            fd = os.open(path, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                before += run_all._cached_bytes(fd, 0, size)
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                after += run_all._cached_bytes(fd, 0, size)
            finally:
                os.close(fd)
    return before, after


def disk_read_bytes(pids: list[int]) -> int:
    """Bytes the processes (all their threads) caused to be read from storage: /proc/<pid>/io ``read_bytes``."""
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("read_bytes:"):
                total += int(line.split()[1])
    return total


async def write_ledgers(cluster: run_all.Cluster, counts: list[int], size: int) -> list[int]:
    """Closed ledgers of ``counts`` entries each, on all of the cluster's bookies (write/ack quorum 2 of 3+)."""
    from bookie.protocol.entry import DigestType

    payload = os.urandom(size)  # incompressible, as messages usually are
    n = len(cluster.bookies)
    ensemble = (n, min(n, 2), min(n, 2))
    ids = []
    async with run_all._client(cluster) as bk:
        for count in counts:
            lh = await bk.create_ledger(*ensemble, digest_type=DigestType.CRC32,
                                        password=run_all.PASSWORD.encode())
            pending = []
            for _ in range(count):
                pending.append(lh.append(payload))
                if len(pending) >= 500:
                    await asyncio.gather(*pending)
                    pending = []
            await asyncio.gather(*pending)
            await lh.close()
            ids.append(int(lh.ledger_id))
    return ids


def restart(cluster: run_all.Cluster) -> None:
    """Every bookie stopped (each flushes its write cache to the entry logs) and started again, caches empty,
    until clients see each one writable."""
    for b in cluster.bookies:
        b.stop()
    for b in cluster.bookies:
        b.start(wait=False)
    for b in cluster.bookies:
        b.wait_ready(run_all.WRITABLE_WITHIN_S)
    run_all.until_writable(cluster)


def read_from_disk(cluster: run_all.Cluster, ledger_id: int, size: int) -> dict[str, float]:
    """The ledger read from the start right after its bookies' files left the page cache."""
    # Their journals and ledger directories: a Java bookie's data directory also holds the native libraries its
    # JVM unpacked and maps (java.io.tmpdir), which no drop evicts and no read of the ledger touches.
    cached_before, cached_after = drop_page_cache([d for b in cluster.bookies for d in (b.journal_dir, b.ledger_dir)])
    load = run_all.load_average()
    cpu0, io0 = run_all.cpu_seconds(cluster.pids), disk_read_bytes(cluster.pids)
    rate, _p50, p99, entries = run_all._sync(run_all.py_catchup(cluster, ledger_id, READ_BATCH))
    cpu = run_all.cpu_seconds(cluster.pids) - cpu0
    disk = disk_read_bytes(cluster.pids) - io0
    return {"entries": entries, "entries_per_s": rate, "mb_per_s": rate * size / 1e6,
            "cpu_us_per_entry": cpu * 1e6 / entries, "p99_batch_ms": p99,
            "cached_mib_before_drop": cached_before / 2**20, "cached_mib_after_drop": cached_after / 2**20,
            "disk_read_mib": disk / 2**20, "disk_read_per_entry_b": disk / entries, "load": load}


def one_round(cluster: run_all.Cluster, entries: int, warmup: int, size: int) -> dict[str, float]:
    run_all.until_writable(cluster)  # a bookie that dropped out meanwhile (a loaded machine) is back
    warm_id, backlog_id = asyncio.run(write_ledgers(cluster, [warmup, entries], size))
    restart(cluster)
    read_from_disk(cluster, warm_id, size)
    row = read_from_disk(cluster, backlog_id, size)
    run_all.reclaim(cluster)
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per implementation: the median of each figure over the rounds, and the spread (min-max) of the rate."""
    out: dict[str, dict[str, float]] = {}
    for impl in ("ours", "java"):
        mine = [r for r in rows if r["impl"] == impl]
        if not mine:
            continue
        keys = [k for k in mine[0] if k not in ("impl", "round")]
        out[impl] = {k: statistics.median(r[k] for r in mine) for k in keys}
        out[impl]["entries_per_s_min"] = min(r["entries_per_s"] for r in mine)
        out[impl]["entries_per_s_max"] = max(r["entries_per_s"] for r in mine)
    if "ours" in out and "java" in out:
        out["ours"]["rate_ratio_to_java"] = out["ours"]["entries_per_s"] / out["java"]["entries_per_s"]
    return out


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=positive, default=3)
    parser.add_argument("--bookies", type=int, choices=(1, 3), default=3)
    parser.add_argument("--entries", type=positive, default=100000, help="backlog length")
    parser.add_argument("--warmup", type=positive, default=30000, help="warm-up ledger length")
    parser.add_argument("--size", type=positive, default=1024, help="entry size, bytes")
    parser.add_argument("--quick", action="store_true")
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    peer = chosen_peer(parser, args)
    args.peer = peer.version
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.rounds, args.entries, args.warmup = 1, 2000, 500
    from bookie_fleet.zookeeper import ZooKeeperServer

    work = Path(tempfile.mkdtemp(prefix="catchup-disk-"))
    zk = ZooKeeperServer(work / "zk")
    started: dict[str, run_all.Cluster] = {}
    rows: list[dict[str, Any]] = []
    try:
        zk.start()
        clusters = run_all.start_clusters(work, zk.connect_string, args.bookies, run_all.IMPLS, started,
                                          peer=peer)
        for r in range(args.rounds):
            for impl in run_all.order_for(r):
                row = {"impl": impl, "round": r} | one_round(clusters[impl], args.entries, args.warmup, args.size)
                rows.append(row)
                print(f"round {r} {impl:4}: {row['entries_per_s']:7.0f} entries/s {row['mb_per_s']:6.1f} MB/s, "
                      f"bookie CPU {row['cpu_us_per_entry']:6.1f} us/entry, p99 batch {row['p99_batch_ms']:6.1f} ms"
                      f" | page cache after drop {row['cached_mib_after_drop']:.1f} of "
                      f"{row['cached_mib_before_drop']:.0f} MiB, disk reads {row['disk_read_mib']:.0f} MiB "
                      f"({row['disk_read_per_entry_b']:.0f} B/entry) | load {row['load']:.1f}", flush=True)
    finally:
        run_all.stop_clusters(started)
        zk.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"rounds": rows, "summary": summary(rows), "settings": vars(args),
                      "cores": os.cpu_count(), "finished": time.strftime("%Y-%m-%d %H:%M:%S")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
