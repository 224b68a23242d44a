"""Streams over ledgers: ``Streams`` (namespaces, streams), ``StreamWriter`` (append, roll), ``StreamReader``
(read from any position, tail).

A stream is a sequence of ledgers (segments); record positions are stream offsets that never change: a
segment covers positions ``first..last``, a record carries its own position, compaction removes records but
keeps the others' positions, retention removes whole segments from the head and moves ``start``.

One module a little over the usual size: the writer and the reader share the segment bookkeeping above.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from bookie.client import errors as e
from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.client.ledger import LedgerHandle
from bookie.metadata.security import ZkSecurity
from bookie.streams import records as rec
from bookie.streams.metadata import (
    Conflict,
    NoSuchStream,
    Segment,
    StreamError,
    StreamMetadata,
    StreamStore,
    now_ms,
)
from bookie.streams.policies import Policies

log = logging.getLogger(__name__)

STREAM_KEY = "bookie-stream"  # custom metadata of every stream ledger: "<namespace>/<stream>"


class RecordTooLarge(StreamError, ValueError):
    pass


class StreamTruncated(StreamError):
    """The reader's position was deleted by retention."""

    def __init__(self, stream: str, position: int, start: int) -> None:
        super().__init__(f"stream {stream}: position {position} was truncated by retention; the stream now "
                         f"starts at position {start}")
        self.position = position
        self.start = start


class WriterFenced(StreamError):
    """Another writer took the stream over."""


class Streams:
    """Entry point: ``async with Streams(zk, ledgers_root=..., streams_root=...) as streams: ...``.

    ``clock``: milliseconds since the epoch (record timestamps, segment ages); tests pass a fake one.
    ``explicit_lac_interval_s``: how often writers publish their LAC on its own, so that a reader sees the last
    records of a writer that stopped appending (without it, the LAC travels on the next entry only).
    ``zk_security``: TLS, identity and ACLs of both ZooKeeper sessions (``bookie.metadata.security``).
    """

    def __init__(self, zk_servers: str, *, ledgers_root: str = "/ledgers", streams_root: str = "/streams",
                 bk: BookKeeper | None = None, clock: Callable[[], int] = now_ms,
                 session_timeout_s: float = 10.0, explicit_lac_interval_s: float = 0.2,
                 zk_security: ZkSecurity | None = None) -> None:
        self.zk_servers = zk_servers
        self._own_bk = bk is None
        # Explicit LAC: a writer that stops appending still lets tailing readers see its last records.
        self.bk = bk or BookKeeper(ClientConfig(zk_servers=zk_servers, ledgers_root=ledgers_root,
                                                zk_session_timeout_ms=int(session_timeout_s * 1000),
                                                explicit_lac_interval_s=explicit_lac_interval_s,
                                                zk_security=zk_security))
        self.store = StreamStore(zk_servers, streams_root, session_timeout_s=session_timeout_s,
                                 security=zk_security)
        self.clock = clock

    async def start(self) -> Streams:
        if self._own_bk:
            await self.bk.start()
        await self.store.connect()
        return self

    async def close(self) -> None:
        await self.store.close()
        if self._own_bk:
            await self.bk.close()

    async def __aenter__(self) -> Streams:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def create_namespace(self, namespace: str, policies: Policies | None = None) -> None:
        await self.store.create_namespace(namespace, policies)

    async def create_stream(self, namespace: str, name: str, policies: Policies | None = None) -> StreamMetadata:
        return await self.store.create_stream(namespace, name, policies)

    async def set_policies(self, namespace: str, name: str, change: Policies) -> StreamMetadata:
        change = change.validated()
        return (await self.store.update(namespace, name, lambda md: dataclasses.replace(
            md, policies=change.over(md.policies)))).value

    async def metadata(self, namespace: str, name: str) -> StreamMetadata:
        return (await self.store.get(namespace, name)).value

    async def policies(self, namespace: str, name: str) -> Policies:
        return await self.store.effective_policies(await self.metadata(namespace, name))

    async def describe(self, namespace: str, name: str) -> dict[str, Any]:
        from bookie.streams.compaction import cleanable_ratio

        md = await self.metadata(namespace, name)
        out = md.to_json()
        out["effective_policies"] = (await self.store.effective_policies(md)).to_json()
        out["total_bytes"] = md.total_bytes
        out["total_records"] = sum(s.records for s in md.segments)
        out["cleanable_ratio"] = round(cleanable_ratio(md), 4)
        return out

    async def writer(self, namespace: str, name: str) -> StreamWriter:
        return await StreamWriter(self, namespace, name).open()

    def reader(self, namespace: str, name: str, position: int = 0) -> StreamReader:
        return StreamReader(self, namespace, name, position)

    async def delete_ledgers(self, ledgers: list[int]) -> None:
        for ledger_id in ledgers:
            try:
                await self.bk.delete_ledger(ledger_id)
            except e.NoSuchLedger:
                pass

    async def new_ledger(self, md: StreamMetadata, policies: Policies, ledger_id: int | None = None,
                         role: str = "writer") -> LedgerHandle:
        return await self.bk.create_ledger(
            policies.ensemble or 3, policies.write_quorum, policies.ack_quorum, ledger_id=ledger_id,
            custom_metadata={STREAM_KEY: md.full_name.encode(), "bookie-stream-root": self.store.root.encode(),
                             "bookie-stream-role": role.encode()})


class StreamWriter:
    """The single writer of a stream. Opening it fences a previous writer (its open ledger is recovered and
    closed) and starts a new segment. Appends are pipelined; ``append`` returns the record's position."""

    def __init__(self, streams: Streams, namespace: str, name: str) -> None:
        self.streams = streams
        self.store = streams.store
        self.namespace = namespace
        self.name = name
        self.policies = Policies()
        self._handle: LedgerHandle | None = None
        self._segment: Segment | None = None
        self._next_entry = 0
        self._bytes = 0
        self._max_ts: int | None = None
        self._lock = asyncio.Lock()
        self._pending: list[asyncio.Future[int]] = []

    async def __aenter__(self) -> StreamWriter:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def open(self) -> StreamWriter:
        current = await self.store.get(self.namespace, self.name)
        self.policies = await self.store.effective_policies(current.value)
        dangling = current.value.open_segment
        if dangling is not None:
            await self._recover(dangling)
        await self._start_segment(closing=None)
        return self

    async def _recover(self, seg: Segment) -> None:
        """Fence and close a segment left open by a previous writer."""
        try:
            handle = await self.streams.bk.open_ledger(seg.ledger, recovery=True)
            last_entry, length = handle.last_add_confirmed, handle.length
        except e.NoSuchLedger:
            last_entry, length = -1, 0
        closed = self._closed(seg, last_entry, length, None)

        def change(md: StreamMetadata) -> StreamMetadata | None:
            if md.open_segment is None or md.open_segment.ledger != seg.ledger:
                return None
            return _replace_tail(md, closed)

        await self.store.update(self.namespace, self.name, change)
        if closed is None:
            await self.streams.delete_ledgers([seg.ledger])

    def _closed(self, seg: Segment, last_entry: int, length: int, max_ts: int | None) -> Segment | None:
        if last_entry < 0:
            return None
        return dataclasses.replace(seg, last=seg.first + last_entry, records=last_entry + 1, bytes=length,
                                   closed_ms=self.streams.clock(), max_timestamp=max_ts)

    async def _start_segment(self, closing: Segment | None) -> None:
        """Create the next ledger and, in one compare-and-set, close ``closing`` and add the new segment."""
        md = (await self.store.get(self.namespace, self.name)).value
        handle = await self.streams.new_ledger(md, self.policies)
        mine = self._segment.ledger if self._segment is not None else None

        def change(md: StreamMetadata) -> StreamMetadata:
            tail = md.open_segment
            if (tail.ledger if tail is not None else None) != mine:
                raise WriterFenced(f"stream {md.full_name}: another writer took over")
            base = _replace_tail(md, closing) if tail is not None else md
            seg = Segment(handle.ledger_id, base.next_position, created_ms=self.streams.clock())
            return dataclasses.replace(base, segments=(*base.segments, seg))

        try:
            versioned = await self.store.update(self.namespace, self.name, change)
        except BaseException:
            await self.streams.delete_ledgers([handle.ledger_id])
            raise
        self._handle, self._segment = handle, versioned.value.segments[-1]
        self._next_entry, self._bytes, self._max_ts = 0, 0, None

    def _needs_roll(self) -> bool:
        assert self._segment is not None
        if self._next_entry == 0:
            return False
        if self.policies.roll_bytes is not None and self._bytes >= self.policies.roll_bytes:
            return True
        age = self.streams.clock() - self._segment.created_ms
        return self.policies.roll_ms is not None and age >= self.policies.roll_ms

    async def roll(self) -> None:
        """Close the current ledger and continue in a new one (positions carry on)."""
        assert self._segment is not None
        old = self._segment.ledger
        closing = await self._finish_segment()
        await self._start_segment(closing)
        if closing is None:
            await self.streams.delete_ledgers([old])  # it held nothing

    async def _finish_segment(self) -> Segment | None:
        assert self._handle is not None and self._segment is not None
        if self._pending:
            await asyncio.gather(*self._pending)
            self._pending.clear()
        await self._handle.close()
        return self._closed(self._segment, self._handle.last_add_confirmed, self._handle.length, self._max_ts)

    def append_nowait(self, value: bytes | None, key: bytes | None = None,
                      timestamp: int | None = None) -> asyncio.Future[int]:
        """Send a record now (no roll check); the future gets its position once acknowledged."""
        assert self._handle is not None and self._segment is not None
        size = rec.encoded_size(key, value)
        limit = self.policies.max_record_bytes
        if limit is not None and size > limit:
            raise RecordTooLarge(f"record of {size} bytes exceeds max_record_bytes={limit} of stream "
                                 f"{self.namespace}/{self.name}")
        if value is None and key is None:
            raise StreamError("a tombstone needs a key")
        ts = self.streams.clock() if timestamp is None else timestamp
        position = self._segment.first + self._next_entry
        data = rec.encode(rec.Record(position, key, value, ts))
        self._next_entry += 1
        self._bytes += len(data)
        self._max_ts = ts if self._max_ts is None else max(self._max_ts, ts)
        first = self._segment.first
        entry = self._handle.append(data)
        out: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def done(f: asyncio.Future[int]) -> None:
            if out.done():
                return
            if f.cancelled():
                out.cancel()
            elif f.exception() is not None:
                exc = f.exception()
                out.set_exception(WriterFenced(f"stream {self.namespace}/{self.name}: {exc}")
                                  if isinstance(exc, e.LedgerFencedError) else exc)  # type: ignore[arg-type]
            else:
                out.set_result(first + f.result())

        entry.add_done_callback(done)
        self._pending.append(out)
        if len(self._pending) > 10000:
            self._pending = [p for p in self._pending if not p.done()]
        return out

    async def append(self, value: bytes | None, key: bytes | None = None, timestamp: int | None = None) -> int:
        """Append one record (``value=None`` with a key: a tombstone); returns its position."""
        async with self._lock:
            if self._needs_roll():
                await self.roll()
            fut = self.append_nowait(value, key, timestamp)
        return await fut

    async def append_many(self, items: Sequence[tuple[bytes | None, bytes | None, int | None]]) -> list[int]:
        """Pipelined appends of (key, value, timestamp); rolls between records as the policies say."""
        futures = []
        async with self._lock:
            for key, value, ts in items:
                if self._needs_roll():
                    await self.roll()
                futures.append(self.append_nowait(value, key, ts))
        return list(await asyncio.gather(*futures))

    async def close(self) -> None:
        if self._handle is None or self._segment is None:
            return
        async with self._lock:
            closing = await self._finish_segment()
            mine = self._segment.ledger

            def change(md: StreamMetadata) -> StreamMetadata | None:
                if md.open_segment is None or md.open_segment.ledger != mine:
                    return None
                return _replace_tail(md, closing)

            await self.store.update(self.namespace, self.name, change)
            if closing is None:
                await self.streams.delete_ledgers([mine])
            self._handle = None


def _replace_tail(md: StreamMetadata, closed: Segment | None) -> StreamMetadata:
    """The open tail segment replaced by its closed form (dropped when it holds nothing)."""
    segments = md.segments[:-1] + ((closed,) if closed is not None else ())
    next_position = closed.last + 1 if closed is not None and closed.last is not None else md.next_position
    return dataclasses.replace(md, segments=segments, next_position=next_position)


class StreamReader:
    """Reads a stream from ``position`` on; ``read`` returns what is there now, ``tail`` waits for more.

    The metadata is read again before every batch, so a reader follows rolls, compaction swaps (positions are
    kept, it re-locates) and retention (a position below the stream's start raises ``StreamTruncated``).
    """

    def __init__(self, streams: Streams, namespace: str, name: str, position: int = 0) -> None:
        self.streams = streams
        self.namespace = namespace
        self.name = name
        self.position = position
        self._handles: dict[int, LedgerHandle] = {}
        self._cursor: tuple[int, int, int] | None = None  # (ledger, entry id, position) of the next entry

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def close(self) -> None:
        self._handles.clear()

    async def _handle(self, seg: Segment) -> LedgerHandle:
        handle = self._handles.get(seg.ledger)
        if handle is None or (handle.metadata.closed is False and not seg.open):
            handle = await self.streams.bk.open_ledger(seg.ledger, recovery=False)
            self._handles[seg.ledger] = handle
        if not handle.closed:
            await handle.read_explicit_lac()  # max of the explicit LAC and the last entries' LAC
        return handle

    async def _locate(self) -> tuple[StreamMetadata, Segment | None]:
        md = (await self.streams.store.get(self.namespace, self.name)).value
        if self.position < md.start:
            raise StreamTruncated(self.full_name, self.position, md.start)
        live = {s.ledger for s in md.segments}
        for ledger in list(self._handles):
            if ledger not in live:
                del self._handles[ledger]
        for seg in md.segments:
            if seg.last is None or seg.last >= self.position:
                if self.position < seg.first:
                    self.position = seg.first  # a gap left by compaction
                return md, seg
        if md.segments and md.segments[-1].last is not None:
            self.position = max(self.position, md.segments[-1].last + 1)
        return md, None

    async def read(self, max_records: int = 1000) -> list[rec.Record]:
        """Up to ``max_records`` records at or after the position (``[]``: nothing more confirmed now)."""
        relocations = 0
        while True:
            _md, seg = await self._locate()
            if seg is None:
                return []
            try:
                out = await self._read_segment(seg, max_records)
            except (e.NoSuchLedger, e.ReadError, e.NoSuchEntry) as exc:
                current = (await self.streams.store.get(self.namespace, self.name)).value
                if self.position < current.start:
                    raise StreamTruncated(self.full_name, self.position, current.start) from exc
                relocations += 1
                if seg.ledger in {s.ledger for s in current.segments} or relocations > 20:
                    raise
                continue  # swapped by compaction meanwhile: re-locate in the new list
            if out or seg.open:
                return out
            # A closed segment with nothing left at or after the position: on to the next one.

    async def _read_segment(self, seg: Segment, max_records: int) -> list[rec.Record]:
        handle = await self._handle(seg)
        last_entry = handle.last_add_confirmed
        if seg.last is not None and seg.dense:
            last_entry = min(last_entry, seg.last - seg.first)
        if seg.dense:
            first_entry = self.position - seg.first
        elif self._cursor is not None and self._cursor[0] == seg.ledger and self._cursor[2] == self.position:
            first_entry = self._cursor[1]
        else:
            first_entry = await self._search(handle, last_entry, self.position)
        if first_entry > last_entry:
            if seg.last is not None:
                self.position = seg.last + 1
            return []
        last = min(last_entry, first_entry + max_records - 1)
        entries = await handle.read(first_entry, last)
        out = [r for r in (rec.decode(x.payload) for x in entries) if r.position >= self.position]
        if out:
            self.position = out[-1].position + 1
        if last == last_entry and seg.last is not None:
            self.position = seg.last + 1  # end of a closed segment (a sparse one may end in a gap)
        self._cursor = (seg.ledger, last + 1, self.position)
        return out

    async def _search(self, handle: LedgerHandle, last_entry: int, position: int) -> int:
        """First entry id of a sparse (compacted) ledger whose record position is >= ``position``."""
        lo, hi = 0, last_entry + 1
        while lo < hi:
            mid = (lo + hi) // 2
            entry = (await handle.read(mid, mid))[0]
            if rec.decode(entry.payload).position < position:
                lo = mid + 1
            else:
                hi = mid
        return lo

    async def read_all(self, batch: int = 1000) -> list[rec.Record]:
        """Everything from the position to what is confirmed now."""
        out: list[rec.Record] = []
        while got := await self.read(batch):
            out.extend(got)
        return out

    async def tail(self, max_records: int = 1000, timeout_s: float = 1.0) -> list[rec.Record]:
        """Like ``read`` but waits up to ``timeout_s`` for new records (long poll on the open ledger)."""
        got = await self.read(max_records)
        if got:
            return got
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            _md, seg = await self._locate()
            remaining_ms = max(1, int((deadline - loop.time()) * 1000))
            if seg is not None and seg.open and seg.dense:
                handle = await self._handle(seg)
                await handle.read_lac_and_entry(self.position - seg.first, min(remaining_ms, 1000))
            else:
                await asyncio.sleep(min(0.1, remaining_ms / 1000))
            got = await self.read(max_records)
            if got:
                return got
        return []


__all__ = ["Conflict", "NoSuchStream", "RecordTooLarge", "StreamReader", "StreamTruncated", "StreamWriter",
           "Streams", "WriterFenced"]
