"""A checkpoint's walk over a write cache (``sorted_entries``) yields the GIL as it goes, and the event loop may
put entries meanwhile: the cache then outgrows the batch the walk was sized for. The walk takes them within the
batch's room (it starts over and grows the batch, and each write into the batch checks its room), and returns
every entry the cache held at its end, sorted. Under ./scripts/sanitize a write past the batch's end stops this
test with AddressSanitizer's report, whether or not it corrupted anything visible."""

from __future__ import annotations

import threading

from bookie.storage._write_path import WriteCache

FIRST = 100_000


def test_entries_put_during_the_walk_are_taken_within_the_batch() -> None:
    cache = WriteCache(max_bytes=1 << 30)
    for entry in range(FIRST):
        cache.put(1, entry, b"x")
    stop, started = threading.Event(), threading.Event()
    puts = 0

    def grow() -> None:  # the event loop's adds while the checkpoint thread walks
        nonlocal puts
        started.set()
        while not stop.is_set():
            cache.put(2, puts, b"y")
            puts += 1

    grower = threading.Thread(target=grow)
    grower.start()
    started.wait()
    try:
        batch = cache.sorted_entries()
    finally:
        stop.set()
        grower.join()
    keys = [(ledger, entry) for ledger, entry, _ in batch]
    assert keys == sorted(keys), "not sorted"
    assert keys[:FIRST] == [(1, entry) for entry in range(FIRST)], "entries of the first ledger lost"
    taken = len(keys) - FIRST
    assert keys[FIRST:] == [(2, entry) for entry in range(taken)], "entries put during the walk lost or repeated"
    assert taken > 0, f"no entry was put during the walk ({puts} puts in all): the walk never saw the cache grow"
