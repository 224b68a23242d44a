"""Closing the storage engine when its closing checkpoint fails (a full ledger disk at shutdown) still stops the
journals and the engine's threads and closes its files, then reports the failure; nothing acknowledged is lost,
since the journal keeps every entry the failed checkpoint could not write and the next start replays it.

The close used to raise straight out of the checkpoint, leaving the journal threads running and the journal and
index files open behind a bookie that believed it had stopped.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from bookie.config import BookieConfig
from bookie.storage.engine import StorageEngine

from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 3
ENTRIES = 10


def _conf(tmp_path: Path) -> BookieConfig:
    return BookieConfig.from_mapping({
        "journalDirectories": str(tmp_path / "journal"), "ledgerDirectories": str(tmp_path / "l0"),
        "flushInterval": 3_600_000, "journalMaxGroupWaitMSec": 0})


def _open_files_under(root: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith(str(root)):
            found.append(target)
    return found


async def test_a_failed_closing_checkpoint_still_stops_the_journals_and_threads_and_closes_the_files(
        tmp_path: Path) -> None:
    threads_before = set(threading.enumerate())
    engine = StorageEngine(_conf(tmp_path))
    await engine.start()
    bodies = {e: entry(LEDGER, e, f"entry {e}".encode()) for e in range(ENTRIES)}
    for body in bodies.values():
        await engine.add_entry(body, MASTER_KEY)

    def full_disk(cache: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    engine.dirs[0].flush_cache = full_disk  # type: ignore[method-assign]
    with pytest.raises(OSError) as raised:
        await engine.close()
    assert raised.value.errno == errno.ENOSPC, f"close reported {raised.value!r}, not the full disk"

    # asyncio_*: the event loop's default executor, the loop's own and shut down with it.
    left = [t.name for t in set(threading.enumerate()) - threads_before
            if t.is_alive() and not t.name.startswith("asyncio_")]
    assert not left, f"threads still running after close: {left}"
    assert not _open_files_under(tmp_path), f"files still open after close: {_open_files_under(tmp_path)}"

    reopened = StorageEngine(_conf(tmp_path))
    await reopened.start()  # replays the journal: the entries the failed checkpoint could not write
    try:
        for entry_id, body in bodies.items():
            assert await reopened.read_entry(LEDGER, entry_id) == body, f"entry {LEDGER}/{entry_id} lost"
    finally:
        await reopened.close()
