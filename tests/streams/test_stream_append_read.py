"""Records appended to a stream (optional key, value or tombstone, timestamp) get consecutive positions that
stay the same across ledger rolls; a reader starts at any position and reads them back in order."""

from __future__ import annotations

from bookie.streams import Policies, Record, Streams

from tests.streams.stream_support import SMALL, Clock


async def test_positions_are_consecutive_and_stable_across_rolls(streams: Streams, clock: Clock) -> None:
    await streams.create_namespace("app", SMALL)
    await streams.create_stream("app", "events")
    async with await streams.writer("app", "events") as w:
        positions = [await w.append(f"value-{i}".encode() * 3, key=f"k{i % 5}".encode()) for i in range(30)]
        positions.append(await w.append(None, key=b"k1"))  # a tombstone
        positions.append(await w.append(b"no-key", timestamp=42))
    assert positions == list(range(32))

    md = await streams.metadata("app", "events")
    assert len(md.segments) > 3  # 400-byte ledgers: it rolled several times
    assert all(not s.open for s in md.segments)
    assert [s.first for s in md.segments] == [0] + [s.last + 1 for s in md.segments[:-1] if s.last is not None]

    everything = await streams.reader("app", "events").read_all()
    assert [r.position for r in everything] == positions
    assert everything[5] == Record(5, b"k0", b"value-5" * 3, clock.now)
    assert everything[30].tombstone and everything[30].key == b"k1"
    assert everything[31] == Record(31, None, b"no-key", 42)

    for start in (0, 7, md.segments[2].first, 31):
        assert [r.position for r in await streams.reader("app", "events", start).read_all()] == positions[start:]
    assert await streams.reader("app", "events", 32).read_all() == []


async def test_a_stream_rolls_by_age(streams: Streams, clock: Clock) -> None:
    await streams.create_namespace("app", Policies(roll_ms=60_000, ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("app", "slow")
    async with await streams.writer("app", "slow") as w:
        await w.append(b"a")
        await w.append(b"b")
        clock.advance(61_000)
        await w.append(b"c")
    md = await streams.metadata("app", "slow")
    assert [(s.first, s.last) for s in md.segments] == [(0, 1), (2, 2)]


async def test_writer_restart_continues_the_positions(streams: Streams) -> None:
    await streams.create_namespace("app", SMALL)
    await streams.create_stream("app", "restart")
    w1 = await streams.writer("app", "restart")
    await w1.append(b"one")
    await w1.append(b"two")
    # w1 is never closed (a crashed writer): the next writer fences and closes its ledger.
    async with await streams.writer("app", "restart") as w2:
        assert await w2.append(b"three") == 2
    values = [r.value for r in await streams.reader("app", "restart").read_all()]
    assert values == [b"one", b"two", b"three"]
