"""Key compaction of one stream as a Spark job, for streams whose key space does not fit one machine's memory.
Same semantics as the single-machine cleaner (``bookie.streams.compaction.keep``), same
ZooKeeper protocol (``bookie.streams.cleaner.Cleaner``: output ledgers registered before they exist, one
compare-and-set swap, old ledgers deleted afterwards), so the two give identical streams.

    driver      finish leftovers; plan: every closed segment is a source, grouped by size into output ledgers
                (Kafka's groupSegmentsBySize); register one ledger id per group in the stream's ``cleaning``
    executors   read the source ledgers in parallel (one task per ledger) -> (position, key, value, ts, group)
    Spark SQL   latest position per key (a shuffle instead of an in-memory offset map), joined back
    executors   ``keep`` per record; one task per group writes its output ledger in position order
    driver      swap the ledger list (exactly one of competing cleaners wins), delete the old ledgers

    python -m bookie_audit.stream_compactor --zk HOST:PORT --ledgers-root /ledgers --streams-root /streams \\
        NS/STREAM [--master local[*]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bookie.streams import records as rec
from bookie.streams.cleaner import Cleaner, CleanResult
from bookie.streams.compaction import group_by_size, keep
from bookie.streams.metadata import Segment, StreamMetadata
from bookie.streams.stream import STREAM_KEY, Streams


@dataclass(frozen=True)
class Connection:
    zk: str
    ledgers_root: str
    streams_root: str

    def streams(self) -> Streams:
        return Streams(self.zk, ledgers_root=self.ledgers_root, streams_root=self.streams_root)


# ------------------------------------------------------------------ executor side


def _read_ledgers(conn: Connection, tasks: Iterable[tuple[int, int]]) -> Iterator[tuple[Any, ...]]:
    """(ledger id, group) -> (position, key, value, timestamp, group) rows of every record in the ledgers (one
    client per partition)."""

    async def read(todo: list[tuple[int, int]]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        async with conn.streams() as streams:
            for ledger_id, group in todo:
                handle = await streams.bk.open_ledger(ledger_id, recovery=False)
                last = handle.last_add_confirmed
                for start in range(0, last + 1, 1000):
                    for x in await handle.read(start, min(last, start + 999)):
                        r = rec.decode(x.payload)
                        out.append((r.position, r.key, r.value, r.timestamp, group))
        return out

    todo = list(tasks)
    if todo:
        yield from asyncio.run(read(todo))


def _write_groups(conn: Connection, plan: dict[int, tuple[int, str, dict[str, int]]],
                  groups: Iterable[tuple[int, Iterable[tuple[Any, ...]]]]) -> Iterator[tuple[int, int, int, int, int]]:
    """(group, rows) -> one output ledger per group, records in position order; yields (group, ledger, records,
    bytes, max timestamp). ``plan``: group -> (ledger id, stream full name, ledger settings)."""

    async def write(streams: Streams, ledger_id: int, full_name: str, settings: dict[str, int],
                    rows: list[tuple[Any, ...]]) -> tuple[int, int, int]:
        handle = await streams.bk.create_ledger(
            settings["ensemble"], settings["write_quorum"], settings["ack_quorum"], ledger_id=ledger_id,
            custom_metadata={STREAM_KEY: full_name.encode(), "bookie-stream-root": conn.streams_root.encode(),
                             "bookie-stream-role": b"spark-compactor"})
        pending = [handle.append(rec.encode(rec.Record(p, k, v, ts))) for p, k, v, ts in rows]
        await asyncio.gather(*pending)
        await handle.close()
        return handle.last_add_confirmed + 1, handle.length, max(ts for _, _, _, ts in rows)

    async def write_all(todo: list[tuple[int, list[tuple[Any, ...]]]]) -> list[tuple[int, int, int, int, int]]:
        out = []
        async with conn.streams() as streams:
            for group, ordered in todo:
                ledger_id, full_name, settings = plan[group]
                count, length, max_ts = await write(streams, ledger_id, full_name, settings, ordered)
                out.append((group, ledger_id, count, length, max_ts))
        return out

    todo = [(group, sorted(((r[0], r[1], r[2], r[3]) for r in rows), key=lambda r: r[0])) for group, rows in groups]
    todo = [(group, ordered) for group, ordered in todo if ordered]
    if todo:
        yield from asyncio.run(write_all(todo))


# ------------------------------------------------------------------ driver


async def _prepare(conn: Connection, cleaner_id: str, namespace: str,
                   name: str) -> tuple[StreamMetadata, list[Segment], list[list[int]], list[int], Any] | None:
    async with conn.streams() as streams:
        cleaner = Cleaner(streams, cleaner_id=cleaner_id)
        await cleaner.register()
        await cleaner.finish_leftovers(namespace, name)
        md = (await streams.store.get(namespace, name)).value
        policies = await streams.store.effective_policies(md)
        sources = md.closed_segments
        if not sources or (sources[-1].last is not None and sources[-1].last < md.cleaned_to):
            return None
        groups = group_by_size([s.bytes for s in sources], policies.roll_bytes or 64 * 1024 * 1024)
        ids = [await streams.bk.store.generate_ledger_id() for _ in groups]

        def register(current: StreamMetadata) -> StreamMetadata:
            mine = current.cleaning.get(cleaner_id, ())
            return _with_cleaning(current, cleaner_id, (*mine, *ids))

        await streams.store.update(namespace, name, register)
        return md, sources, groups, ids, policies


def _with_cleaning(md: StreamMetadata, cleaner_id: str, ledgers: tuple[int, ...]) -> StreamMetadata:
    import dataclasses

    cleaning = {k: v for k, v in md.cleaning.items() if k != cleaner_id}
    if ledgers:
        cleaning[cleaner_id] = ledgers
    return dataclasses.replace(md, cleaning=cleaning)


def compact_stream(spark: Any, conn: Connection, namespace: str, name: str, *, now_ms: int | None = None,
                   cleaner_id: str | None = None) -> CleanResult:
    """Compact every closed segment of ``namespace/name`` with Spark; returns the same summary as the cleaner."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    cleaner_id = cleaner_id or f"spark-{uuid.uuid4().hex[:10]}"
    result = CleanResult(f"{namespace}/{name}")
    prepared = asyncio.run(_prepare(conn, cleaner_id, namespace, name))
    if prepared is None:
        result.nothing_to_do = True
        return result
    md, sources, groups, ids, policies = prepared
    group_of = {seg.ledger: g for g, members in enumerate(groups) for seg in (sources[i] for i in members)}
    horizon = (now_ms if now_ms is not None else asyncio.run(_now(conn))) - (policies.delete_retention_ms or 0)
    settings = {"ensemble": policies.ensemble or 3, "write_quorum": policies.write_quorum or policies.ensemble or 3,
                "ack_quorum": policies.ack_quorum or policies.write_quorum or policies.ensemble or 3}
    plan = {g: (ids[g], md.full_name, settings) for g in range(len(groups))}
    end = (sources[-1].last or 0) + 1
    result.old_ledgers = [s.ledger for s in sources]
    result.bytes_before = sum(s.bytes for s in sources)
    try:
        sc = spark.sparkContext
        tasks = sc.parallelize([(s.ledger, group_of[s.ledger]) for s in sources], max(1, len(sources)))
        schema = StructType([StructField("position", LongType(), False), StructField("key", BinaryType(), True),
                             StructField("value", BinaryType(), True), StructField("timestamp", LongType(), False),
                             StructField("grp", IntegerType(), False)])
        rows = spark.createDataFrame(tasks.mapPartitions(lambda it: _read_ledgers(conn, it)), schema).cache()
        result.records_read = rows.count()
        latest = rows.where(F.col("key").isNotNull()).groupBy("key").agg(F.max("position").alias("latest"))
        joined = rows.join(latest, on="key", how="left")

        def kept(row: Any) -> bool:
            record = rec.Record(row["position"], row["key"], row["value"], row["timestamp"])
            return keep(record, row["latest"], horizon)

        survivors = joined.rdd.filter(kept).map(lambda r: (r["grp"], (r["position"], r["key"], r["value"],
                                                                      r["timestamp"])))
        written = (survivors.groupByKey(max(1, len(groups)))
                   .mapPartitions(lambda it: _write_groups(conn, plan, it)).collect())
        rows.unpersist()
    except BaseException:
        asyncio.run(_abandon(conn, cleaner_id, namespace, name, ids))
        raise
    by_group = {w[0]: w for w in written}
    outputs = []
    for g, members in enumerate(groups):
        if g not in by_group:
            continue
        _, ledger_id, count, length, max_ts = by_group[g]
        first, last = sources[members[0]], sources[members[-1]]
        closed = max(sources[i].closed_ms or 0 for i in members)
        outputs.append(Segment(ledger_id, first.first, last.last, records=count, bytes=length, created_ms=closed,
                               closed_ms=closed, max_timestamp=max_ts, dense=False))
    result.records_kept = sum(s.records for s in outputs)
    result.bytes_after = sum(s.bytes for s in outputs)
    result.new_ledgers = [s.ledger for s in outputs]
    unused = [ids[g] for g in range(len(groups)) if g not in by_group]
    result.swapped, result.lost_race = asyncio.run(_swap(conn, cleaner_id, namespace, name, sources, outputs,
                                                         unused, ids, end))
    result.cleaned_to = end if result.swapped else md.cleaned_to
    return result


async def _now(conn: Connection) -> int:
    async with conn.streams() as streams:
        return streams.clock()


async def _abandon(conn: Connection, cleaner_id: str, namespace: str, name: str, ids: list[int]) -> None:
    async with conn.streams() as streams:
        await Cleaner(streams, cleaner_id=cleaner_id).abandon(namespace, name, ids)


async def _swap(conn: Connection, cleaner_id: str, namespace: str, name: str, sources: list[Segment],
                outputs: list[Segment], unused: list[int], ids: list[int], end: int) -> tuple[bool, bool]:
    from bookie.streams.metadata import Conflict

    async with conn.streams() as streams:
        cleaner = Cleaner(streams, cleaner_id=cleaner_id)
        await streams.delete_ledgers(unused)  # registered ids no group needed (never created)
        try:
            await cleaner.swap(namespace, name, [s.ledger for s in sources], outputs, end)
        except Conflict:
            await cleaner.abandon(namespace, name, ids)
            return False, True
        await cleaner.finish_leftovers(namespace, name)
        return True, False


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bookie-stream-compactor", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stream", metavar="NS/STREAM")
    p.add_argument("--zk", required=True)
    p.add_argument("--ledgers-root", default="/ledgers")
    p.add_argument("--streams-root", default="/streams")
    p.add_argument("--master", default=None)
    args = p.parse_args(argv)
    from bookie_audit.spark import build_session

    namespace, _, name = args.stream.partition("/")
    spark = build_session(args.master, app_name="bookie-stream-compactor")
    try:
        result = compact_stream(spark, Connection(args.zk, args.ledgers_root, args.streams_root), namespace, name)
    finally:
        spark.stop()
    print(json.dumps(result.to_json(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
