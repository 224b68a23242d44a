"""Ledger GC against a scripted metadata store (no ZooKeeper): verifyMetadataOnGC keeps ledgers whose metadata
still names this bookie, any metadata error aborts before the next deletion, over-replicated ledgers need the
lock and a re-read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from bookie.gc.ledgers import LedgerGc, LedgerGcAborted
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import LedgerRange, MetadataError, NoSuchLedger, Versioned

ME = "127.0.0.1:3181"


def metadata(*bookies: str, closed: bool = True) -> LedgerMetadata:
    return LedgerMetadata(ensemble_size=len(bookies), write_quorum_size=len(bookies),
                          ack_quorum_size=len(bookies), last_entry_id=5, length=50,
                          state=LedgerState.CLOSED if closed else LedgerState.OPEN, ensembles={0: bookies})


class FakeStore:
    def __init__(self, ranges: list[tuple[int, ...]], ledgers: dict[int, Any], fail_after: int | None = None):
        self.ranges = ranges
        self.ledgers = ledgers  # id -> LedgerMetadata | Exception
        self.fail_after = fail_after
        self.locks: set[int] = set()

    async def ledger_ranges(self) -> AsyncIterator[LedgerRange]:
        for i, r in enumerate(self.ranges):
            if self.fail_after is not None and i >= self.fail_after:
                raise MetadataError("connection loss")
            yield LedgerRange(r)

    async def read_ledger_metadata(self, ledger_id: int) -> Versioned[LedgerMetadata]:
        found = self.ledgers.get(ledger_id)
        if found is None:
            raise NoSuchLedger(str(ledger_id))
        if isinstance(found, Exception):
            raise found
        return Versioned(found, 1)

    async def acquire_underreplicated_lock(self, ledger_id: int, owner: str) -> bool:
        if ledger_id in self.locks:
            return False
        self.locks.add(ledger_id)
        return True

    async def release_underreplicated_lock(self, ledger_id: int) -> None:
        self.locks.discard(ledger_id)


def gc(store: FakeStore, verify: bool = False) -> LedgerGc:
    return LedgerGc(store, ME, verify=verify, op_rate=0, timeout_s=5)  # type: ignore[arg-type]


async def test_ranges_failing_part_way_delete_nothing() -> None:
    deleted: list[int] = []

    async def delete(lid: int) -> None:
        deleted.append(lid)

    store = FakeStore([(1, 2), (10, 11), (20,)], {}, fail_after=1)
    with pytest.raises(LedgerGcAborted):
        await gc(store).run([1, 2, 3, 10, 11, 20, 30], delete)
    assert deleted == [], "ledger 3 would be garbage by the first range, but nothing happens on a partial listing"


async def test_verify_keeps_ledgers_that_still_name_this_bookie() -> None:
    deleted: list[int] = []

    async def delete(lid: int) -> None:
        deleted.append(lid)

    store = FakeStore([(1,)], {2: metadata(ME), 3: metadata("10.0.0.9:3181")})
    result = await gc(store, verify=True).run([1, 2, 3, 4], delete)
    assert deleted == [3, 4] and result.kept_by_verify == [2]


async def test_verify_error_aborts_before_the_next_deletion() -> None:
    deleted: list[int] = []

    async def delete(lid: int) -> None:
        deleted.append(lid)

    store = FakeStore([(1,)], {3: MetadataError("session expired")})
    with pytest.raises(LedgerGcAborted):
        await gc(store, verify=True).run([1, 2, 3, 4], delete)
    assert deleted == [2]


async def test_overreplicated_needs_closed_absent_and_the_lock() -> None:
    deleted: list[int] = []

    async def delete(lid: int) -> None:
        deleted.append(lid)

    elsewhere = "10.0.0.9:3181"
    store = FakeStore([], {1: metadata(elsewhere), 2: metadata(elsewhere, closed=False), 3: metadata(ME),
                           4: metadata(elsewhere), 5: MetadataError("timeout")})
    store.locks.add(4)  # a replication worker holds it
    assert await gc(store).overreplicated([1, 2, 3, 4, 5, 6], delete) == [1]
    assert deleted == [1] and store.locks == {4}, "our lock released, theirs untouched"
