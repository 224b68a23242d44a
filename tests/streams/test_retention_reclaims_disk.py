"""End to end: retention deletes a stream's expired ledgers, the bookie's garbage collection then reclaims
their entry logs, and the bytes on the bookie's disk go down by about the size of what expired while the
rest of the stream reads back intact."""

from __future__ import annotations

import time

from bookie.streams import Policies, Streams
from bookie.streams.retention import Retention

from tests.gc.gcutil import GC_OVERRIDES, gc_now, log_sizes
from tests.streams.stream_support import Clock
from tests.support.bookies import BookieFactory

HOUR = 3600_000
RECORD = 4000


async def test_expired_ledgers_become_free_disk_space(bookie_factory: BookieFactory, streams_root: str) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)
    bookie = cluster[0]
    clock = Clock()
    now = clock.now + 3 * HOUR
    policies = Policies(ensemble=1, write_quorum=1, ack_quorum=1, roll_bytes=10**9, retention_ms=HOUR,
                        delete_pause_ms=0, delete_when=f"{time.localtime(now / 1000).tm_hour:02d}")
    async with Streams(cluster.zk_connect, ledgers_root=cluster.ledgers_root, streams_root=streams_root,
                       clock=clock) as streams:
        await streams.create_namespace("e2e", policies)
        await streams.create_stream("e2e", "s")
        async with await streams.writer("e2e", "s") as w:
            await w.append_many([(None, bytes([i % 251]) * RECORD, None) for i in range(600)])  # ~2.4 MB, old
            await w.roll()
            clock.advance(5 * HOUR // 2)
            await w.append_many([(None, b"fresh-%d" % i, None) for i in range(50)])
        bookie.restart()  # checkpoint: the old ledger's entries are in finalized entry logs
        expired = (await streams.metadata("e2e", "s")).segments[0]
        before = sum(log_sizes(bookie).values())

        report = await Retention(streams).run_once(now_ms=now)
        assert report.deleted_ledgers == [expired.ledger]
        await gc_now(bookie, major=True, minor=True)

        after = sum(log_sizes(bookie).values())
        assert before - after > 0.8 * expired.bytes, (before, after, expired.bytes)
        rest = await streams.reader("e2e", "s", expired.last + 1 if expired.last is not None else 0).read_all()
        assert [r.value for r in rest] == [b"fresh-%d" % i for i in range(50)]
