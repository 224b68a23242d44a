"""Which entries a dead bookie took with it, and the metadata repair that gives exactly those up: an all-lost
position gets a live bookie, a position whose entries survive elsewhere is left to autorecovery, the loss is
recorded in the ledger's custom metadata (and read back from it, as the storage audit does), an open ledger is
closed before its hole, and a position holding both lost and surviving entries is refused."""

from __future__ import annotations

import pytest
from bookie.metadata.data_loss import (
    LOST_ENTRIES_KEY,
    EntryRange,
    UnrepairableLoss,
    give_up_lost_entries,
    lost_entries,
    recorded_losses,
)
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState

A, B, C, D = "a:3181", "b:3181", "c:3181", "d:3181"


def ledger(ensembles: dict[int, tuple[str, ...]], write_quorum: int, last: int | None,
           custom: dict[str, bytes] | None = None) -> LedgerMetadata:
    size = len(next(iter(ensembles.values())))
    return LedgerMetadata(ensemble_size=size, write_quorum_size=write_quorum, ack_quorum_size=1,
                          ensembles=ensembles, state=LedgerState.CLOSED if last is not None else LedgerState.OPEN,
                          last_entry_id=-1 if last is None else last, length=0 if last is None else 1000,
                          custom_metadata=custom or {})


def test_a_single_replica_ledger_on_the_dead_bookie_loses_every_entry_and_gets_a_live_bookie() -> None:
    md = ledger({0: (A,)}, 1, 24, {"pulsar/managed-ledger": b"public/default/persistent/t"})
    assert lost_entries(md, {A}) == [EntryRange(0, 24)]
    repair = give_up_lost_entries(md, {A}, [A, B, C], ledger_id=7)
    assert repair.lost == (EntryRange(0, 24),)
    assert repair.metadata.ensembles == {0: (C,)}            # ledger 7 rotates to the second live bookie
    assert [(r.dead, r.live) for r in repair.replaced] == [(A, C)]
    assert repair.metadata.custom_metadata[LOST_ENTRIES_KEY] == b"a:3181:0-24"
    assert repair.metadata.custom_metadata["pulsar/managed-ledger"] == b"public/default/persistent/t"
    assert (repair.metadata.state, repair.metadata.last_entry_id, repair.metadata.length) == \
        (LedgerState.CLOSED, 24, 1000)


def test_a_replicated_ledger_loses_nothing_and_is_left_to_autorecovery() -> None:
    md = ledger({0: (A, B)}, 2, 99)
    assert lost_entries(md, {A}) == []
    repair = give_up_lost_entries(md, {A}, [B, C])
    assert repair.metadata == md and repair.lost == () and repair.replaced == ()


def test_striped_single_copies_lose_every_entry_of_the_dead_position_only() -> None:
    md = ledger({0: (A, B, C)}, 1, 9)
    assert lost_entries(md, {A}) == [EntryRange(0, 0), EntryRange(3, 3), EntryRange(6, 6), EntryRange(9, 9)]
    repair = give_up_lost_entries(md, {A}, [B, C, D])
    assert repair.metadata.ensembles == {0: (D, B, C)}
    assert repair.metadata.custom_metadata[LOST_ENTRIES_KEY] == b"a:3181:0-0,3-3,6-6,9-9"


def test_only_the_segments_holding_the_dead_bookie_lose_entries() -> None:
    md = ledger({0: (B,), 10: (A,), 20: (C,)}, 1, 29)
    assert lost_entries(md, {A}) == [EntryRange(10, 19)]
    assert give_up_lost_entries(md, {A}, [B, C, D], ledger_id=0).metadata.ensembles == \
        {0: (B,), 10: (B,), 20: (C,)}


def test_an_open_ledger_is_closed_before_the_first_entry_it_lost() -> None:
    md = ledger({0: (B,), 10: (A,)}, 1, None)
    assert lost_entries(md, {A}) == [EntryRange(10, None)]
    repair = give_up_lost_entries(md, {A}, [B, C])
    assert repair.metadata.state is LedgerState.CLOSED and repair.metadata.last_entry_id == 9
    assert repair.metadata.ensembles == {0: (B,)}
    assert repair.metadata.custom_metadata[LOST_ENTRIES_KEY] == b"a:3181:10-"


def test_a_second_loss_is_appended_to_the_first_record() -> None:
    md = ledger({0: (A,)}, 1, 4, {LOST_ENTRIES_KEY: b"z:3181:0-1"})
    record = give_up_lost_entries(md, {A}, [B]).metadata.custom_metadata[LOST_ENTRIES_KEY]
    assert record == b"z:3181:0-1;a:3181:0-4"


def test_a_position_holding_lost_and_surviving_entries_is_refused() -> None:
    md = ledger({0: (A, B, C)}, 2, 8)   # A and B dead: entry 0 (A, B) lost, entry 2 (C, A) survives on C
    assert lost_entries(md, {A, B}) == [EntryRange(0, 0), EntryRange(3, 3), EntryRange(6, 6)]
    with pytest.raises(UnrepairableLoss, match="holds both lost entries and entries that survive"):
        give_up_lost_entries(md, {A, B}, [C, D])


def test_no_live_bookie_outside_the_ensemble_is_refused() -> None:
    with pytest.raises(UnrepairableLoss, match="no live bookie"):
        give_up_lost_entries(ledger({0: (A,)}, 1, 3), {A}, [A])


def test_the_record_reads_back_as_the_ranges_given_up_and_a_damaged_part_names_nothing() -> None:
    md = ledger({0: (A, B, C)}, 1, 9, {LOST_ENTRIES_KEY: b"z:3181:20-"})
    record = give_up_lost_entries(md, {A}, [D]).metadata.custom_metadata[LOST_ENTRIES_KEY].decode()
    assert recorded_losses(record) == [EntryRange(20, None), EntryRange(0, 0), EntryRange(3, 3), EntryRange(6, 6),
                                       EntryRange(9, 9)]
    assert recorded_losses("a:3181,b:3181:4-7;garbage;c:3181:x-2,5-") == [EntryRange(4, 7), EntryRange(5, None)]
