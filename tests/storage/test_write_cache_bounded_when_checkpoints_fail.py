"""Checkpoints that keep failing (a full disk) hold adds back instead of growing the write cache: a ledger
directory never holds more than its two cache halves (``dbStorage_writeCacheMaxSizeMb``), and every entry it
accepted is flushed once the disk has room again.

A failed checkpoint used to put its unflushed entries back into the active cache, on top of what clients had
added while the flush was being tried: each failed checkpoint let up to another half of the cache in.
"""

from __future__ import annotations

import asyncio
import errno
import time
from pathlib import Path
from typing import Any

from bookie.config import BookieConfig
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import StorageThrottledError

from tests.support.raw_client import MASTER_KEY, entry

CACHE_BYTES = 1024 * 1024  # both halves
ENTRY_BYTES = 10_000
WRITERS = 8
FAILED_CHECKPOINTS = 6


async def test_failing_checkpoints_keep_the_write_cache_within_its_two_halves(tmp_path: Path) -> None:
    conf = BookieConfig.from_mapping({
        "journalDirectories": str(tmp_path / "journal"), "ledgerDirectories": str(tmp_path / "l0"),
        "flushInterval": 3_600_000, "journalMaxGroupWaitMSec": 0, "dbStorage_writeCacheMaxSizeMb": 1,
        "dbStorage_maxThrottleTimeMs": 100})
    engine = StorageEngine(conf)
    await engine.start()
    d = engine.dirs[0]
    real_flush = d.flush_cache

    def full_disk(cache: Any) -> int:
        time.sleep(0.2)  # a flush writes for a while before the disk is found full
        raise OSError(errno.ENOSPC, "No space left on device")

    accepted: dict[tuple[int, int], bytes] = {}
    held = 0
    peak = 0
    stop = asyncio.Event()
    added = asyncio.Event()

    async def writer(ledger: int) -> None:
        nonlocal held, peak
        entry_id = 0
        while not stop.is_set():
            body = entry(ledger, entry_id, bytes(ENTRY_BYTES))
            try:
                await engine.add_entry(body, MASTER_KEY)
                accepted[(ledger, entry_id)] = body
                entry_id += 1
                added.set()
            except StorageThrottledError:
                held += 1
            peak = max(peak, d.pending_bytes())

    d.flush_cache = full_disk  # type: ignore[method-assign]
    writers = [asyncio.create_task(writer(ledger)) for ledger in range(1, WRITERS + 1)]
    try:
        for _ in range(FAILED_CHECKPOINTS):
            if not d.pending_bytes():  # something for the checkpoint to fail on
                added.clear()
                await added.wait()
            try:
                await engine.checkpoint()
                raise AssertionError("the checkpoint flushed onto a full disk")
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
            peak = max(peak, d.pending_bytes())
        stop.set()
        await asyncio.gather(*writers)
        assert held > 0, "adds were held back"
        assert peak <= CACHE_BYTES + ENTRY_BYTES + 100, f"the write cache grew to {peak} bytes"

        d.flush_cache = real_flush  # type: ignore[method-assign]
        await engine.checkpoint()
        await engine.checkpoint()
        assert d.pending_bytes() == 0
        for (ledger, entry_id), body in accepted.items():
            assert await engine.read_entry(ledger, entry_id) == body, f"entry {ledger}/{entry_id} lost"
            assert d.locations.get(ledger, entry_id) is not None, f"entry {ledger}/{entry_id} never flushed"
    finally:
        stop.set()
        await asyncio.gather(*writers, return_exceptions=True)
        d.flush_cache = real_flush  # type: ignore[method-assign]
        await engine.close()
