"""Ledger GC's comparison with ZooKeeper's ranges, as BookKeeper's ScanAndCompareGarbageCollector does it."""

from __future__ import annotations

from bookie.gc.ledgers import ledgers_to_delete
from bookie.metadata.store import LedgerRange


def ranges(*ids: tuple[int, ...]) -> list[LedgerRange]:
    return [LedgerRange(r) for r in ids]


def test_local_ledgers_missing_from_their_range_are_garbage() -> None:
    assert ledgers_to_delete([1, 2, 3, 10, 11], ranges((1, 3), (10, 12))) == [2, 11]


def test_ledgers_between_ranges_and_after_the_last_are_garbage() -> None:
    assert ledgers_to_delete([5, 7, 20, 30], ranges((1, 6), (8, 20))) == [5, 7, 30]


def test_no_ranges_means_every_local_ledger_is_garbage_so_listing_must_never_fail_silently() -> None:
    # This is why LedgerGc reads every range first and aborts on any metadata error (tests/gc/ ZooKeeper test).
    assert ledgers_to_delete([1, 2], []) == [1, 2]


def test_negative_ids_are_never_collected() -> None:
    assert ledgers_to_delete([-5, 1], ranges((1,))) == []
