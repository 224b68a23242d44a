"""A ledger directory whose RocksDB index cannot be synced (EIO) stops the bookie (fail-stop, status 5), as any
other I/O error of a checkpoint does: RocksDB reports it as a plain exception, which the checkpoint once took for a
passing error to retry, while the index refused every later write ("Writer has previous error") and the bookie
stayed registered as writable, fencing and taking adds it could never checkpoint.

The device fails for real as far as the bookie can tell: libfiu's preloaded wrappers (tests/support/faults.py)
make its fdatasync calls answer EIO, which RocksDB syncs its table files with (the bookie's own marks are synced by
fsync, which keeps working). The journal does not sync each group here (journalSyncData off), and the ledger's
entries are checkpointed, both indexes synced, before the fault, so the first call to fail is the ledgers index's
sync of a fence, a checkpoint with no entries to write (failing fsync too, or before the indexes were synced, a
checkpoint's other syncs could fail first and stop the bookie for another reason).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bookie.protocol.codes import StatusCode
from bookie.server import EXIT_STORAGE_FAILED

from tests.support.bookies import BookieFactory
from tests.support.faults import fail_calls, start_under_libfiu
from tests.support.raw_client import MASTER_KEY, RawConnection

LEDGER = 7
ENTRIES = 20
STOPS_WITHIN = 30.0  # s: the checkpoint after the fence runs within a flush interval (1 s)


async def test_a_failed_index_sync_stops_the_bookie(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = bookie_factory(1, start=False, journalSyncData=False)[0]
    control = tmp_path / "fiu" / "ctl"
    await asyncio.to_thread(start_under_libfiu, bookie, control)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for entry_id in range(ENTRIES):
            assert (await conn.add(LEDGER, entry_id, b"payload")).status == StatusCode.EOK
        await _wait_indexed(bookie.ledger_dir / "current", ENTRIES)
        await asyncio.to_thread(fail_calls, bookie, control, ["fdatasync"])
        # The fence reaches the journal (written, not synced) and the ledgers index, to be synced by the checkpoint.
        await conn.read(LEDGER, ENTRIES - 1, fence=True, master_key=MASTER_KEY)
    assert bookie.proc is not None
    deadline = time.monotonic() + STOPS_WITHIN
    while bookie.proc.poll() is None:
        assert time.monotonic() < deadline, (f"still running {STOPS_WITHIN} s after its ledgers index failed to "
                                             f"sync; log:\n{bookie.tail_log()}")
        await asyncio.sleep(0.1)
    assert bookie.proc.returncode == EXIT_STORAGE_FAILED, bookie.tail_log()
    log = bookie.log_path.read_text()
    assert "syncing the ledgers index" in log and "Input/output error" in log, bookie.tail_log()


async def _wait_indexed(current: Path, entries: int) -> None:
    """Until a checkpoint has put the entries in the entry log and their locations in the index, and synced the
    ledgers index with the ledger's master key: each index's recorded sequence number counts its writes, and is
    recorded once the index is synced."""
    wanted = {current / "locations.sequence": entries, current / "ledgers.sequence": 1}
    for _ in range(600):
        if all(path.exists() and int(path.read_text() or 0) >= least for path, least in wanted.items()):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no checkpoint indexed the {entries} entries within 60 s")
