"""Two cleaners compacting the same stream at the same time: both rewrite it, both try to swap the ledger list
with a compare-and-set on the stream's znode; exactly one wins, the other deletes what it wrote, and the
stream holds the compacted records once."""

from __future__ import annotations

import asyncio

from bookie.streams import Policies, Record, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import model

from tests.streams.stream_support import Clock, visible


async def test_exactly_one_of_two_concurrent_cleaners_wins(streams: Streams, clock: Clock) -> None:
    await streams.create_namespace("x", Policies(roll_bytes=300, cleanup_policy="compact", delete_pause_ms=0,
                                                 ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("x", "s")
    items = [(f"k{i % 6}".encode(), f"v{i}".encode(), None) for i in range(50)]
    async with await streams.writer("x", "s") as w:
        positions = await w.append_many(items)
    written = [Record(p, k, v, clock.now) for p, (k, v, _) in zip(positions, items, strict=True)]
    old = {s.ledger for s in (await streams.metadata("x", "s")).segments}

    # Both passes are held just before their swap until both got there: a true race for the compare-and-set.
    arrived = 0
    both_there = asyncio.Event()

    async def barrier(step: str, info: dict[str, object]) -> None:
        nonlocal arrived
        if step == "before_swap":
            arrived += 1
            if arrived == 2:
                both_there.set()
            await both_there.wait()

    first, second = Cleaner(streams, cleaner_id="cleaner-a", hook=barrier), Cleaner(streams, cleaner_id="cleaner-b",
                                                                                     hook=barrier)
    results = await asyncio.gather(first.clean("x", "s"), second.clean("x", "s"))

    assert sorted(r.swapped for r in results) == [False, True]
    winner, loser = (results[0], results[1]) if results[0].swapped else (results[1], results[0])
    assert loser.lost_race and loser.new_ledgers

    md = await streams.metadata("x", "s")
    assert [s.ledger for s in md.segments] == winner.new_ledgers
    assert md.cleaning == {} and md.pending_deletes == ()
    existing = set(await streams.bk.list_ledgers())
    assert not existing & (set(loser.new_ledgers) | old)  # the loser's output and the old ledgers are gone
    assert visible(await streams.reader("x", "s").read_all()) == visible(model(written, 0))
