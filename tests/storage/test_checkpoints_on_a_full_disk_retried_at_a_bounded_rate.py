"""While the disk stays full, the adds waiting for room in a full write cache start a checkpoint at most once per
``FAILED_CHECKPOINT_RETRY_S``, and the run of failures is logged once, not at every try: they wake every 50 ms,
and each wake-up used to start another checkpoint onto the full disk and log its failure, about 20 a second for
as long as an add waited (``dbStorage_maxThrottleTimeMs``). Once the disk has room, the next try flushes and the
adds go on, within that retry time."""

from __future__ import annotations

import errno
import logging
from typing import Any

import pytest
from bookie.storage.engine import FAILED_CHECKPOINT_RETRY_S
from bookie.storage.errors import StorageThrottledError
from bookie.storage.ledger_dir import WriteCache

from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 3
THROTTLE_MS = 3000
ENTRY = 64 * 1024


def _fill(cache: WriteCache, first_id: int) -> int:
    """``cache`` filled directly (no add on the way starts a checkpoint); the next entry id."""
    entry_id = first_id
    while cache.has_room(ENTRY):
        cache.put(LEDGER, entry_id, entry(LEDGER, entry_id, b"f" * ENTRY))
        entry_id += 1
    return entry_id


async def test_an_add_waiting_on_a_full_disk_retries_its_checkpoint_once_a_second_and_goes_on_once_there_is_room(
        engines: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    engine = await engines(dbStorage_writeCacheMaxSizeMb=1, dbStorage_maxThrottleTimeMs=THROTTLE_MS)
    await engine.add_entry(entry(LEDGER, 0, b"first"), MASTER_KEY)
    d = engine.dir_of(LEDGER)
    flush_cache = d.flush_cache
    tries = 0

    def full_disk(cache: WriteCache) -> int:
        nonlocal tries
        tries += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(d, "flush_cache", full_disk)
    # Both halves full: the half a failed checkpoint could not flush, and the active one.
    entry_id = _fill(d.write_cache, 1)
    with pytest.raises(OSError):
        await engine.checkpoint()
    assert d.flushing is not None
    entry_id = _fill(d.write_cache, entry_id)
    tries = 0

    caplog.set_level(logging.INFO, logger="bookie.storage.engine")
    with pytest.raises(StorageThrottledError):
        await engine.add_entry(entry(LEDGER, entry_id, b"x" * ENTRY), MASTER_KEY)
    most = THROTTLE_MS / 1000 / FAILED_CHECKPOINT_RETRY_S + 2
    assert 1 <= tries <= most, f"{tries} checkpoints tried onto the full disk in {THROTTLE_MS} ms (at most {most})"
    failures_logged = [r for r in caplog.records if r.levelno >= logging.ERROR and "checkpoint failed" in r.message]
    assert len(failures_logged) == 1, [r.message for r in failures_logged]

    monkeypatch.setattr(d, "flush_cache", flush_cache)  # the disk has room again
    await engine.add_entry(entry(LEDGER, entry_id, b"x" * ENTRY), MASTER_KEY)
    assert d.write_cache.get(LEDGER, entry_id) is not None  # in the half the retried checkpoint emptied
    await engine.checkpoint()  # after the retried one, still flushing the other half (its end is then logged)
    assert any("checkpoint succeeded after" in r.message for r in caplog.records), caplog.text
