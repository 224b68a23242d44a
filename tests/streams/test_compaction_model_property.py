"""Property: for random streams of puts and tombstones (few keys, several ledgers), a stream compacted by the
cleaner and read in full equals the model "latest value per key, tombstones older than the delete horizon
removed", whatever the offset map's memory bound (a small one takes several checkpointed passes; records of
at most 9 keys fit a 200-byte ledger, the small map holds 10 of the 16 keys)."""

from __future__ import annotations

import asyncio
import uuid

from bookie.streams import Policies, Record, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import ENTRY_OVERHEAD, model
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.streams.stream_support import Clock, clean_fully, visible
from tests.support.bookies import BookieSet

NOW = 1_700_000_000_000
HORIZON_MS = 60_000
OLD, RECENT = NOW - 10 * HORIZON_MS, NOW - HORIZON_MS // 2

operations = st.lists(
    st.tuples(st.sampled_from([b"k%d" % i for i in range(16)]),
              st.one_of(st.none(), st.binary(min_size=0, max_size=20)),  # None: a tombstone
              st.sampled_from([OLD, RECENT])),
    min_size=1, max_size=60)


async def _scenario(bookies: BookieSet, ops: list[tuple[bytes, bytes | None, int]], map_bytes: int) -> None:
    clock = Clock(NOW)
    async with Streams(bookies.zk_connect, ledgers_root=bookies.ledgers_root,
                       streams_root=f"/streams-{uuid.uuid4().hex[:8]}", clock=clock) as streams:
        await streams.create_namespace("p", Policies(roll_bytes=200, ensemble=3, write_quorum=2, ack_quorum=2,
                                                     cleanup_policy="compact", delete_retention_ms=HORIZON_MS,
                                                     delete_pause_ms=0))
        await streams.create_stream("p", "s")
        async with await streams.writer("p", "s") as w:
            positions = await w.append_many([(k, v, ts) for k, v, ts in ops])
        written = [Record(p, k, v, ts) for p, (k, v, ts) in zip(positions, ops, strict=True)]

        passes = await clean_fully(Cleaner(streams, map_bytes=map_bytes), "p", "s", NOW)
        event(f"cleaning passes: {min(passes, 3)}{'+' if passes > 3 else ''}")

        compacted = await streams.reader("p", "s").read_all()
        assert visible(compacted) == visible(model(written, NOW - HORIZON_MS))
        md = await streams.metadata("p", "s")
        assert md.pending_deletes == () and md.cleaning == {}
        ledgers = set(await streams.bk.list_ledgers())
        assert {s.ledger for s in md.segments} <= ledgers
        await streams.delete_ledgers([s.ledger for s in md.segments])


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=operations, map_bytes=st.sampled_from([10 * (ENTRY_OVERHEAD + 3), 64 * 1024]))  # 10 keys: passes
def test_compacted_stream_equals_the_latest_value_per_key_model(bookies: BookieSet,
                                                                ops: list[tuple[bytes, bytes | None, int]],
                                                                map_bytes: int) -> None:
    asyncio.run(_scenario(bookies, ops, map_bytes))
