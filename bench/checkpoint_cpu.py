"""A checkpoint's cost per entry, and how long it keeps the event loop from the GIL.

    python bench/checkpoint_cpu.py                 # 200,000 entries of 100 B and 1 KiB, 64 ledgers, best of 3
    PYTHONPATH=/path/to/other/checkout/bookie_image python bench/checkpoint_cpu.py   # another version
    python bench/checkpoint_cpu.py --quick         # tiny run for the test suite

A write cache filled in memory is written to a fresh entry log and location index as a checkpoint does it (the
cache's sorted entries appended to the log, their packed locations put in the index; or, in versions before
those, ``by_ledger`` into ``EntryLogger.append_ledgers`` and ``LocationIndex.put_many``). Reported per size:
the process CPU time of that work divided by the entries, and the longest time another Python thread (standing
for the event loop, waking every 0.1 ms) went without the GIL meanwhile. The flushes (fdatasync) cost per
checkpoint, not per entry, and are left out. Nothing is written to docs: docs/benchmarks.md quotes its
before/after numbers by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bookie.storage.entrylog import EntryLogger
from bookie.storage.index import LocationIndex
from bookie.storage.ledger_dir import WriteCache
from bookie_fleet.processes import stop_on_sigterm
from workdir import add_workdir_argument, ensure_workdir  # bench/ is on sys.path when a bench script runs


def filled_cache(entries: int, size: int, ledgers: int) -> WriteCache:
    cache = WriteCache(1 << 40)
    payload = os.urandom(max(0, size - 16))
    for i in range(entries):
        ledger_id, entry_id = i % ledgers + 1, i // ledgers
        cache.put(ledger_id, entry_id, struct.pack(">qq", ledger_id, entry_id) + payload)
    return cache


class Watcher:
    """A thread that wakes every 0.1 ms and records the longest gap between its wake-ups: how long it waited for
    the GIL, as the event loop would."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.0001)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> Watcher:
        self._thread.start()
        time.sleep(0.01)
        self.longest = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def checkpoint(cache: WriteCache, workdir: Path) -> tuple[float, float]:
    """(CPU us per entry, longest GIL wait of another thread in ms) of writing ``cache`` as a checkpoint does."""
    with tempfile.TemporaryDirectory(dir=workdir) as directory:
        logger = EntryLogger(Path(directory), 1 << 30)
        index = LocationIndex(Path(directory) / "index")
        with Watcher() as watcher:
            started = time.process_time()
            if hasattr(cache, "sorted_entries"):
                locations = logger.append_batch(cache.sorted_entries())
                index.put_packed(locations)
                written = len(locations) // 24
            else:  # a version from before the packed locations
                older: Any = (cache, logger, index)
                entries = older[1].append_ledgers(older[0].by_ledger())
                older[2].put_many(entries)
                written = len(entries)
            spent = time.process_time() - started
        logger.roll()
        index.close()
    if written != len(cache):
        raise SystemExit(f"checkpoint wrote {written} of {len(cache)} entries")
    return spent / written * 1e6, watcher.longest * 1e3


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--sizes", default="100,1024", help="entry sizes in bytes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    add_workdir_argument(parser)
    parser.add_argument("--quick", action="store_true", help="2,000 entries, one round")
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.entries, args.rounds = 2_000, 1
    workdir = ensure_workdir(args.workdir)
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        cache = filled_cache(args.entries, size, 64)
        rounds = [checkpoint(cache, workdir) for _ in range(args.rounds)]
        best, stall = min(r[0] for r in rounds), min(r[1] for r in rounds)
        print(f"{size} B: {best:.2f} us CPU per entry, event loop kept from the GIL at most {stall:.1f} ms "
              f"(best of {args.rounds})")
        results.append({"size": size, "us_per_entry": best, "longest_gil_wait_ms": stall})
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
