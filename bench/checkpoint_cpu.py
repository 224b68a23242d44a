"""CPU of a checkpoint's entry-log append, per entry: the checkpoint thread's share of every add.

    python bench/checkpoint_cpu.py                 # 200,000 entries of 100 B and 1 KiB, 64 ledgers, best of 3
    PYTHONPATH=/path/to/other/checkout/bookie_image python bench/checkpoint_cpu.py   # another version
    python bench/checkpoint_cpu.py --quick         # tiny run for the test suite

A write cache filled in memory is appended to a fresh entry log as a checkpoint does it (``by_ledger`` into
``EntryLogger.append_ledgers``, or the older ``sorted_entries`` into ``append_many``), and the process CPU time
of that call is divided by the entries. The flush (fdatasync) and the index are left out: they cost per
checkpoint, not per entry. That thread holds the GIL while it runs Python, so its time per entry is taken from
the event loop too. Nothing is written to docs: docs/benchmarks.md quotes its before/after numbers by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bookie.storage.entrylog import EntryLogger
from bookie.storage.ledger_dir import WriteCache


def filled_cache(entries: int, size: int, ledgers: int) -> WriteCache:
    cache = WriteCache(1 << 40)
    payload = os.urandom(max(0, size - 16))
    for i in range(entries):
        ledger_id, entry_id = i % ledgers + 1, i // ledgers
        cache.put(ledger_id, entry_id, struct.pack(">qq", ledger_id, entry_id) + payload)
    return cache


def us_per_entry(cache: WriteCache, workdir: Path) -> float:
    with tempfile.TemporaryDirectory(dir=workdir) as directory:
        logger = EntryLogger(Path(directory), 1 << 30)
        started = time.process_time()
        if hasattr(cache, "by_ledger"):
            written = logger.append_ledgers(cache.by_ledger())
        else:  # a version from before append_ledgers
            older: Any = cache
            written = logger.append_many(older.sorted_entries())
        spent = time.process_time() - started
        logger.roll()
    if len(written) != len(cache):
        raise SystemExit(f"checkpoint wrote {len(written)} of {len(cache)} entries")
    return spent / len(written) * 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--sizes", default="100,1024", help="entry sizes in bytes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--quick", action="store_true", help="2,000 entries, one round")
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.rounds = 2_000, 1
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        cache = filled_cache(args.entries, size, 64)
        best = min(us_per_entry(cache, args.workdir) for _ in range(args.rounds))
        print(f"{size} B: {best:.2f} us CPU per entry (best of {args.rounds})")
        results.append({"size": size, "us_per_entry": best})
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
