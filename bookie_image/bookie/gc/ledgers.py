"""Ledger GC: forget local ledgers that ZooKeeper no longer knows (``ScanAndCompareGarbageCollector``).

Fail closed: the ledger ranges are read completely before anything is decided, and any ZooKeeper error
(connection loss, timeout, a missing root) aborts the whole pass, so an unreachable or failing metadata
service can never look like "no ledgers" (BookKeeper #870, YahooArchive PR #15). The comparison itself is
BookKeeper's, range by range, and is pure (``ledgers_to_delete``).
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from bookie.gc.throttle import AsyncRateLimiter
from bookie.metadata.ledger_metadata import LedgerMetadata
from bookie.metadata.store import LedgerRange, MetadataError, MetadataStore, NoSuchLedger

log = logging.getLogger(__name__)

MAX_LEDGER_ID = 2**63 - 1


class LedgerGcAborted(Exception):
    """A metadata error stopped ledger GC before it deleted anything more."""


def ledgers_to_delete(local: Sequence[int], ranges: Iterable[LedgerRange]) -> list[int]:
    """Local ledgers absent from metadata, compared range by range as BookKeeper does.

    For each range, local ledgers in ``[previous end + 1, range end]`` missing from the range are garbage;
    after the last range, every local ledger above its end is. Ledger ids below 0 are never touched (they
    are the bookie's own, e.g. the sanity check's).
    """
    local = sorted(i for i in local if i >= 0)
    doomed: list[int] = []
    start = 0
    for r in ranges:
        in_metadata = set(r.ledger_ids)
        lo, hi = bisect.bisect_left(local, start), bisect.bisect_right(local, r.end)
        doomed.extend(lid for lid in local[lo:hi] if lid not in in_metadata)
        start = r.end + 1
    doomed.extend(local[bisect.bisect_left(local, start):])
    return doomed


def bookie_in_ensembles(md: LedgerMetadata, bookie_id: str) -> bool:
    return any(bookie_id in ensemble for ensemble in md.ensembles.values())


@dataclass
class LedgerGcResult:
    deleted: list[int] = field(default_factory=list)
    kept_by_verify: list[int] = field(default_factory=list)


class LedgerGc:
    """doGcLedgers and the over-replicated ledger scan for one bookie."""

    def __init__(self, store: MetadataStore, bookie_id: str, *, verify: bool, op_rate: float,
                 timeout_s: float, overreplicated_concurrency: int = 1000) -> None:
        self.store = store
        self.bookie_id = bookie_id
        self.verify = verify
        self.limiter = AsyncRateLimiter(op_rate)
        self.timeout_s = timeout_s
        self.concurrency = max(1, overreplicated_concurrency)

    async def collect_ranges(self) -> list[LedgerRange]:
        """All ranges, or ``LedgerGcAborted``: a partial listing must never be acted upon."""
        async def listing() -> list[LedgerRange]:
            return [r async for r in self.store.ledger_ranges()]

        try:
            async with asyncio.timeout(self.timeout_s):
                return await listing()
        except (MetadataError, TimeoutError) as exc:
            raise LedgerGcAborted(f"listing ledger ranges failed: {exc!r}") from exc

    async def run(self, local_snapshot: Sequence[int], delete: Callable[[int], Awaitable[None]]) -> LedgerGcResult:
        """``local_snapshot`` must be taken before the ranges are listed: a ledger created meanwhile then
        has its metadata (clients create metadata before writing) in the listing."""
        ranges = await self.collect_ranges()
        result = LedgerGcResult()
        for lid in ledgers_to_delete(local_snapshot, ranges):
            if self.verify and await self._still_needed(lid):
                result.kept_by_verify.append(lid)
                continue
            await delete(lid)
            result.deleted.append(lid)
        return result

    async def _still_needed(self, ledger_id: int) -> bool:
        """verifyMetadataOnGC: keep a ledger whose metadata exists and names this bookie; abort on errors."""
        await self.limiter.acquire()
        try:
            async with asyncio.timeout(self.timeout_s):
                md = (await self.store.read_ledger_metadata(ledger_id)).value
        except NoSuchLedger:
            return False
        except (MetadataError, TimeoutError) as exc:
            raise LedgerGcAborted(f"verifying ledger {ledger_id} failed: {exc!r}") from exc
        return bookie_in_ensembles(md, self.bookie_id)

    # ------------------------------------------------------------------ over-replicated ledgers
    async def overreplicated(self, local: Sequence[int], delete: Callable[[int], Awaitable[None]]) -> list[int]:
        """Closed ledgers whose ensembles no longer contain this bookie, deleted under the ledger's
        under-replication lock so a replication worker is not copying them at the same time."""
        semaphore = asyncio.Semaphore(self.concurrency)
        deleted: list[int] = []

        async def one(lid: int) -> None:
            async with semaphore:
                try:
                    if await self._overreplicated_one(lid, delete):
                        deleted.append(lid)
                except (MetadataError, TimeoutError) as exc:
                    log.warning("over-replicated check of ledger %d skipped: %r", lid, exc)

        await asyncio.gather(*(one(lid) for lid in local if lid >= 0))
        return sorted(deleted)

    async def _read(self, ledger_id: int) -> LedgerMetadata | None:
        await self.limiter.acquire()
        try:
            async with asyncio.timeout(self.timeout_s):
                return (await self.store.read_ledger_metadata(ledger_id)).value
        except NoSuchLedger:
            return None  # plain ledger GC handles deleted ledgers

    async def _overreplicated_one(self, lid: int, delete: Callable[[int], Awaitable[None]]) -> bool:
        md = await self._read(lid)
        if md is None or not md.closed or bookie_in_ensembles(md, self.bookie_id):
            return False
        await self.limiter.acquire()
        if not await self.store.acquire_underreplicated_lock(lid, self.bookie_id):
            return False
        try:
            md = await self._read(lid)  # re-read under the lock: an ensemble change may have added us back
            if md is None or not md.closed or bookie_in_ensembles(md, self.bookie_id):
                return False
            log.info("ledger %d is closed and no longer has %s in its ensembles: deleting the local copy",
                     lid, self.bookie_id)
            await delete(lid)
            return True
        finally:
            await self.store.release_underreplicated_lock(lid)

