"""The offset map is bounded (Kafka's dedupe buffer): a pass takes whole dirty ledgers while their keys fit,
checkpoints where it stopped, and the next pass goes on from there; a single ledger with more keys than the
map holds is refused with a clear error rather than cleaned wrongly."""

from __future__ import annotations

import pytest
from bookie.streams import Policies, Record, Streams
from bookie.streams.cleaner import Cleaner, CleanerError
from bookie.streams.compaction import ENTRY_OVERHEAD, model

from tests.streams.stream_support import Clock, visible


async def test_a_small_map_cleans_in_several_checkpointed_passes(streams: Streams, clock: Clock) -> None:
    await streams.create_namespace("m", Policies(roll_bytes=250, cleanup_policy="compact", delete_pause_ms=0,
                                                 ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("m", "s")
    items = [(f"key{i:03d}".encode(), f"value-{i}".encode(), None) for i in range(60)]
    items += [(f"key{i:03d}".encode(), b"second", None) for i in range(0, 60, 2)]
    async with await streams.writer("m", "s") as w:
        positions = await w.append_many(items)
    written = [Record(p, k, v, clock.now) for p, (k, v, _) in zip(positions, items, strict=True)]
    md = await streams.metadata("m", "s")
    per_ledger = max(s.records for s in md.segments)

    cleaner = Cleaner(streams, map_bytes=(6 + ENTRY_OVERHEAD) * per_ledger * 2)
    checkpoints: list[int] = []
    while (md := await streams.metadata("m", "s")).cleaned_to < md.next_position:
        result = await cleaner.clean("m", "s")
        assert result.swapped and result.cleaned_to > (checkpoints[-1] if checkpoints else 0)
        checkpoints.append(result.cleaned_to)
    assert len(checkpoints) > 2
    assert visible(await streams.reader("m", "s").read_all()) == visible(model(written, 0))


async def test_a_ledger_larger_than_the_map_is_refused(streams: Streams) -> None:
    await streams.create_namespace("m", Policies(roll_bytes=10_000, cleanup_policy="compact", ensemble=3,
                                                 write_quorum=2, ack_quorum=2))
    await streams.create_stream("m", "wide")
    async with await streams.writer("m", "wide") as w:
        await w.append_many([(f"k{i}".encode(), b"v", None) for i in range(20)])
    with pytest.raises(CleanerError, match="raise the map size"):
        await Cleaner(streams, map_bytes=5 * ENTRY_OVERHEAD).clean("m", "wide")
    md = await streams.metadata("m", "wide")
    assert md.cleaned_to == 0 and md.cleaning == {} and len(await streams.reader("m", "wide").read_all()) == 20
