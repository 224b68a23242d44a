"""The cleaner picks the compacted stream with the highest cleanable ratio (dirty bytes over clean + dirty
bytes of the closed ledgers) above its min_cleanable_ratio; streams under the ratio or not compacted are
left alone; after a pass the checkpoint makes the stream clean (ratio 0)."""

from __future__ import annotations

from bookie.streams import Policies, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import cleanable_ratio

from tests.streams.stream_support import Clock


async def _fill(streams: Streams, name: str, count: int) -> None:
    async with await streams.writer("d", name) as w:
        await w.append_many([(f"k{i % 3}".encode(), b"x" * 20, None) for i in range(count)])


async def test_dirtiest_stream_first_and_only_above_the_ratio(streams: Streams, clock: Clock) -> None:
    await streams.create_namespace("d", Policies(roll_bytes=300, cleanup_policy="compact", delete_pause_ms=0,
                                                 min_cleanable_ratio=0.5, ensemble=3, write_quorum=2,
                                                 ack_quorum=2))
    for name in ("small", "big", "plain"):
        await streams.create_stream("d", name, Policies(cleanup_policy="delete") if name == "plain" else None)
        await _fill(streams, name, 40 if name == "big" else 10)
    cleaner = Cleaner(streams)

    # Both compacted streams are entirely dirty (ratio 1.0): the first pass cleans one of them...
    first = await cleaner.run_once()
    assert first is not None and first.swapped and first.stream in ("d/small", "d/big")
    assert cleanable_ratio(await streams.metadata(*first.stream.split("/"))) == 0.0
    # ...the second the other one; then nothing is dirty enough and the delete-policy stream is never cleaned.
    second = await cleaner.run_once()
    assert second is not None and {first.stream, second.stream} == {"d/small", "d/big"}
    assert await cleaner.run_once() is None

    # New appends to "big" make it dirty again, but only 1 of 2+ closed ledgers: under the 0.5 ratio.
    async with await streams.writer("d", "big") as w:
        await w.append(b"y", key=b"k1")
    md = await streams.metadata("d", "big")
    assert 0 < cleanable_ratio(md) < 0.5
    assert await cleaner.dirtiest() is None
    assert (await cleaner.dirtiest(min_ratio=0.0)) == ("d", "big", cleanable_ratio(md))
