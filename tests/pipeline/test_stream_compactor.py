"""The Spark stream compactor (pipeline/bookie_audit/stream_compactor.py) gives exactly the stream the
single-machine cleaner gives on the same input, which is the "latest value per key, tombstones older than the
delete horizon removed" model; it swaps the ledger list like the cleaner and deletes the old ledgers."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from bookie.streams import Policies, Record
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import model
from bookie_audit.stream_compactor import Connection, compact_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.bookies import BookieSet

NOW = 1_700_000_000_000
HORIZON_MS = 60_000
POLICIES = Policies(roll_bytes=300, ensemble=3, write_quorum=2, ack_quorum=2, cleanup_policy="compact",
                    delete_retention_ms=HORIZON_MS, delete_pause_ms=0)

operations = st.lists(
    st.tuples(st.one_of(st.none(), st.sampled_from([b"a", b"b", b"c", b"dd", b"e"])),
              st.one_of(st.none(), st.binary(max_size=16)),
              st.sampled_from([NOW - 10 * HORIZON_MS, NOW])),
    min_size=1, max_size=50).map(lambda ops: [(k, v if k is not None or v is not None else b"", t) for k, v, t in ops])


def _rows(records: list[Record]) -> list[tuple[int, bytes | None, bytes | None, int]]:
    return [(r.position, r.key, r.value, r.timestamp) for r in records]


async def _two_copies(conn: Connection, ops: list[tuple[bytes | None, bytes | None, int]],
                      policies: Policies) -> list[Record]:
    async with conn.streams() as streams:
        await streams.create_namespace("c", policies)
        for name in ("by-cleaner", "by-spark"):
            await streams.create_stream("c", name)
            async with await streams.writer("c", name) as w:
                positions = await w.append_many(ops)
        cleaner = Cleaner(streams)
        while (md := await streams.metadata("c", "by-cleaner")).cleaned_to < md.next_position:
            assert (await cleaner.clean("c", "by-cleaner", now_ms=NOW)).swapped
        return [Record(p, k, v, t) for p, (k, v, t) in zip(positions, ops, strict=True)]


async def _read(conn: Connection, name: str) -> tuple[list[Record], Any, set[int]]:
    async with conn.streams() as streams:
        return (await streams.reader("c", name).read_all(), await streams.metadata("c", name),
                set(await streams.bk.list_ledgers()))


def _scenario(spark: Any, bookies: BookieSet, ops: list[tuple[bytes | None, bytes | None, int]],
              policies: Policies = POLICIES) -> None:
    conn = Connection(bookies.zk_connect, bookies.ledgers_root, f"/streams-{uuid.uuid4().hex[:8]}")
    written = asyncio.run(_two_copies(conn, ops, policies))
    before = asyncio.run(_read(conn, "by-spark"))[1]

    result = compact_stream(spark, conn, "c", "by-spark", now_ms=NOW)

    assert result.swapped and result.records_read == len(ops)
    by_spark, md, ledgers = asyncio.run(_read(conn, "by-spark"))
    by_cleaner = asyncio.run(_read(conn, "by-cleaner"))[0]
    assert _rows(by_spark) == _rows(by_cleaner) == _rows(model(written, NOW - HORIZON_MS))
    assert md.cleaned_to == md.next_position and md.cleaning == {} and md.pending_deletes == ()
    assert not {s.ledger for s in before.segments} & ledgers  # old ledgers deleted
    assert {s.ledger for s in md.segments} <= ledgers


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=operations)
def test_spark_compaction_equals_the_cleaner_and_the_model(spark: Any, bookies: BookieSet,
                                                           ops: list[tuple[bytes | None, bytes | None, int]]) -> None:
    _scenario(spark, bookies, ops)


def test_a_stream_of_several_thousand_records(spark: Any, bookies: BookieSet) -> None:
    ops: list[tuple[bytes | None, bytes | None, int]] = [
        (f"key-{i % 97}".encode(), None if i % 13 == 0 else f"v{i}".encode(), NOW - (i % 3) * HORIZON_MS)
        for i in range(3000)]
    _scenario(spark, bookies, ops, dataclasses.replace(POLICIES, roll_bytes=16_000))  # a dozen ledgers
