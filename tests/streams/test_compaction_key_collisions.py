"""The offset map finds keys by hash but compares the keys themselves: with a hash function under which
every key collides, compaction still keeps the latest record of *each* key (Kafka's map keeps hashes only)."""

from __future__ import annotations

from bookie.streams import Policies, Record, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import OffsetMap, model, retain

from tests.streams.stream_support import Clock, clean_fully, visible


def test_colliding_keys_do_not_shadow_each_other() -> None:
    offsets = OffsetMap(10_000, hash_fn=lambda key: 7)
    offsets.put(b"apple", 3)
    offsets.put(b"pear", 1)
    offsets.put(b"apple", 2)  # older: ignored
    assert (offsets.get(b"apple"), offsets.get(b"pear"), offsets.get(b"plum")) == (3, 1, None)
    assert offsets.collisions == 1 and offsets.size == 2
    assert retain(Record(1, b"pear", b"v", 0), offsets, 0)
    assert not retain(Record(2, b"apple", b"v", 0), offsets, 0)


async def test_the_cleaner_with_an_all_colliding_hash_drops_nothing_it_should_keep(streams: Streams,
                                                                                  clock: Clock) -> None:
    await streams.create_namespace("c", Policies(roll_bytes=200, cleanup_policy="compact", delete_pause_ms=0,
                                                 ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("c", "s")
    async with await streams.writer("c", "s") as w:
        items = [(f"key-{i % 7}".encode(), f"v{i}".encode(), None) for i in range(40)]
        positions = await w.append_many(items)
    written = [Record(p, k, v, clock.now) for p, (k, v, _) in zip(positions, items, strict=True)]

    await clean_fully(Cleaner(streams, hash_fn=lambda key: 0), "c", "s", clock.now)

    kept = await streams.reader("c", "s").read_all()
    assert visible(kept) == visible(model(written, 0))
    assert sorted(r.key for r in kept if r.key) == [f"key-{i}".encode() for i in range(7)]
