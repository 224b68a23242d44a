"""A checkpoint's walk over a write cache (``sorted_entries``) yields the GIL as it goes; when the cache changes
meanwhile (a ledger deleted, an entry added), the walk starts over and still returns, with every entry of the
cache as it was at the end, sorted. It once started over forever, the bookie's checkpoint thread spinning on a
core, its write cache never flushed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

WALK_WHILE_CHANGED = textwrap.dedent("""
    import threading
    from bookie.storage._write_path import WriteCache

    cache = WriteCache(max_bytes=1 << 30)
    for entry in range(100_000):
        cache.put(1, entry, b"x")
    stop = threading.Event()
    changes = 0

    def change() -> None:  # what the event loop does to a cache being flushed: deletes, puts
        global changes
        entry = 0
        while not stop.is_set():
            cache.put(2, entry, b"y")
            cache.delete_ledger(2) if entry % 2 else None
            entry += 1
            changes += 1

    changer = threading.Thread(target=change)
    changer.start()
    try:
        batch = cache.sorted_entries()
    finally:
        stop.set()
        changer.join()
    keys = [(ledger, entry) for ledger, entry, _ in batch]
    assert keys == sorted(keys), "not sorted"
    assert sum(1 for ledger, _ in keys if ledger == 1) == 100_000, "entries lost"
    print(changes)
""")


def test_a_walk_that_saw_the_cache_change_starts_over_and_returns() -> None:
    # In a process of its own: a walk that never returns holds the GIL, and would hang the test run itself.
    result = subprocess.run([sys.executable, "-c", WALK_WHILE_CHANGED], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 0  # the cache did change while the walk went on
