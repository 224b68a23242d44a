"""Ledger recovery (``LedgerRecoveryOp``): fence, find the last entry, re-replicate the tail, close.

1. The metadata goes from OPEN to IN_RECOVERY (a writer's next ensemble change then fails).
2. Every bookie of the last ensemble is fenced (read of entry -1 with the fence flag and the master key):
   from then on the old writer's adds fail with EFENCED. Once the answers cover every write quorum with
   ``wq - aq + 1`` bookies, the highest LAC they carry is a lower bound of what the writer acknowledged.
3. Entries from LAC + 1 are read until one is missing on more than ``wq - aq`` replicas (then it cannot have
   been acknowledged); each found entry is written again to its whole write quorum (recovery adds bypass the
   fence), so every acknowledged entry ends fully replicated.
4. The metadata is closed with that last entry and its length. If another client closed it first, its result
   is taken (both recoveries reach the same answer).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from bookie.client import errors as e
from bookie.client.ledger import LedgerHandle
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState

log = logging.getLogger(__name__)


async def recover_ledger(handle: LedgerHandle) -> None:
    """Recover and close ``handle``'s ledger (no-op when it is already closed)."""

    def start(md: LedgerMetadata) -> LedgerMetadata | None:
        if md.state is LedgerState.OPEN:
            return replace(md, state=LedgerState.IN_RECOVERY)
        return None

    md = await handle.update_metadata(start)
    if md.closed:
        _adopt_closed(handle, md)
        return
    handle.recovering = True
    handle.writable = True
    try:
        await _recover(handle)
    finally:
        handle.writable = False
        handle.recovering = False


async def _recover(handle: LedgerHandle) -> None:
    lac, _ = await handle._read_last_entries(fence=True)
    length = (await handle.read_entry(lac)).length if lac >= 0 else 0
    handle.last_add_confirmed = handle.last_add_pushed = lac
    handle.length = handle._length_at_lac = length
    tail_md = handle.metadata
    adds: list[asyncio.Future[int]] = []
    entry_id = lac + 1
    while True:
        entry = await handle.recovery_read(entry_id, tail_md)
        if entry is None:
            break
        adds.append(handle.recovery_add(entry))
        handle.check_writable_error()
        entry_id += 1
    if adds:
        results = await asyncio.gather(*adds, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise e.LedgerRecoveryError(f"ledger {handle.ledger_id}: re-replicating the tail failed: "
                                        f"{failures[0]}") from failures[0]
    log.info("ledger %d recovered: last entry %d (fenced at LAC %d, %d tail entries re-replicated)",
             handle.ledger_id, handle.last_add_confirmed, lac, len(adds))
    await handle.close()


def _adopt_closed(handle: LedgerHandle, md: LedgerMetadata) -> None:
    handle._closed = True
    handle.last_add_confirmed = handle.last_add_pushed = md.last_entry_id
    handle.length = handle._length_at_lac = md.length
