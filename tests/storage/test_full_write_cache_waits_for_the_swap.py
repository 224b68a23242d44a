"""An add that finds its write cache full waits for a checkpoint to swap the caches, not for that checkpoint's
flush to end: the checkpoint's first step gives it an empty cache, and the flush of the full one goes on meanwhile.
(With a flush that cannot finish until the test lets it, the add must still complete.)"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from bookie.storage.ledger_dir import WriteCache

from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 3


async def test_an_add_to_a_full_cache_goes_on_once_the_caches_are_swapped(
        engines: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = await engines(dbStorage_writeCacheMaxSizeMb=1)
    await engine.add_entry(entry(LEDGER, 0, b"first"), MASTER_KEY)
    d = engine.dir_of(LEDGER)
    release = threading.Event()
    flush_cache = d.flush_cache

    def held_flush(cache: WriteCache) -> int:
        release.wait(60)
        return flush_cache(cache)

    monkeypatch.setattr(d, "flush_cache", held_flush)
    cache = d.write_cache
    entry_id = 1
    while cache.has_room(64 * 1024):  # filled directly: no add on the way triggers a checkpoint early
        cache.put(LEDGER, entry_id, entry(LEDGER, entry_id, b"f" * (64 * 1024)))
        entry_id += 1
    try:
        add = asyncio.ensure_future(engine.add_entry(entry(LEDGER, entry_id, b"x" * (64 * 1024)), MASTER_KEY))
        done, _ = await asyncio.wait({add}, timeout=30)
        assert add in done, "the add waited for the flush of the full cache, not for the swap"
        assert d.flushing is cache, "the full cache is still being flushed"
        assert d.write_cache.get(LEDGER, entry_id) is not None
    finally:
        release.set()
