"""The stream cleaner: Kafka-style key compaction over ledgers.

One pass (``Cleaner.clean``) on one stream:

1. finish what earlier passes left: delete the ledgers listed in ``pending_deletes`` and the ledgers of dead
   cleaners listed in ``cleaning`` (a cleaner is alive while its ephemeral znode exists);
2. build the offset map over the dirty closed segments (from the checkpoint ``cleaned_to`` on), whole segments
   at a time while they fit the memory bound; the map ends at ``end``;
3. rewrite every closed segment below ``end`` into new ledgers keeping only what ``compaction.retain`` keeps
   (records keep their positions); each new ledger id is recorded in the stream's ``cleaning`` entry *before*
   the ledger is created, so a killed cleaner never leaves a ledger nobody knows about;
4. swap, in one compare-and-set of the stream's metadata: the rewritten segments replace the old ones (only if
   the old ones are still the head of the list: of two cleaners exactly one wins), ``cleaned_to`` = ``end``,
   the old ledgers go to ``pending_deletes``;
5. delete the old ledgers, pausing ``delete_pause_ms`` between two.

Readers see the old list or the new one; positions are the same in both, so a reader crossing the swap
neither misses a retained record nor sees one twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bookie import failpoints
from bookie.client import errors as e
from bookie.client.ledger import LedgerHandle
from bookie.streams import records as rec
from bookie.streams.compaction import OffsetMap, cleanable_ratio, default_hash, retain, segment_keys
from bookie.streams.metadata import Conflict, Segment, StreamError, StreamMetadata
from bookie.streams.policies import Policies
from bookie.streams.stream import Streams

log = logging.getLogger(__name__)

Hook = Callable[[str, dict[str, object]], Awaitable[None]]


@dataclass
class CleanResult:
    stream: str
    swapped: bool = False
    lost_race: bool = False
    nothing_to_do: bool = False
    records_read: int = 0
    records_kept: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    old_ledgers: list[int] = field(default_factory=list)
    new_ledgers: list[int] = field(default_factory=list)
    cleaned_to: int = 0
    map_keys: int = 0
    leftovers_deleted: list[int] = field(default_factory=list)

    @property
    def bytes_reclaimed(self) -> int:
        return self.bytes_before - self.bytes_after

    def to_json(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        out["bytes_reclaimed"] = self.bytes_reclaimed
        return out


class CleanerError(StreamError):
    pass


class Cleaner:
    def __init__(self, streams: Streams, *, cleaner_id: str | None = None, map_bytes: int = 64 * 1024 * 1024,
                 hash_fn: Callable[[bytes], int] = default_hash, hook: Hook | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.streams = streams
        self.store = streams.store
        self.cleaner_id = cleaner_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.map_bytes = map_bytes
        self.hash_fn = hash_fn
        self.hook = hook
        self.progress = progress
        self._registered = False

    async def _at(self, step: str, **info: object) -> None:
        failpoints.hit(f"stream.cleaner.{step}")
        if self.hook is not None:
            await self.hook(step, info)

    async def register(self) -> None:
        if not self._registered:
            await self.store.register_cleaner(self.cleaner_id)
            self._registered = True

    # ------------------------------------------------------------ choosing

    async def dirtiest(self, min_ratio: float | None = None) -> tuple[str, str, float] | None:
        """The compacted stream with the highest cleanable ratio above its ``min_cleanable_ratio``."""
        best: tuple[str, str, float] | None = None
        for ns, name in await self.store.all_streams():
            md = (await self.store.get(ns, name)).value
            policies = await self.store.effective_policies(md)
            if not policies.compact:
                continue
            ratio = cleanable_ratio(md)
            threshold = min_ratio if min_ratio is not None else (policies.min_cleanable_ratio or 0.0)
            if ratio > threshold and (best is None or ratio > best[2]):
                best = (ns, name, ratio)
        return best

    async def run_once(self, min_ratio: float | None = None) -> CleanResult | None:
        """Clean the dirtiest stream, if any is dirty enough."""
        chosen = await self.dirtiest(min_ratio)
        if chosen is None:
            return None
        return await self.clean(chosen[0], chosen[1])

    # ------------------------------------------------------------ one pass

    async def finish_leftovers(self, namespace: str, name: str) -> list[int]:
        """Delete ledgers earlier passes left behind (pending deletes, dead cleaners' unfinished output)."""
        md = (await self.store.get(namespace, name)).value
        live = await self.store.live_cleaners()
        dead = {cid: ledgers for cid, ledgers in md.cleaning.items() if cid not in live and cid != self.cleaner_id}
        doomed = list(md.pending_deletes) + [lid for ledgers in dead.values() for lid in ledgers]
        if not doomed:
            return []
        policies = await self.store.effective_policies(md)
        for i, ledger_id in enumerate(doomed):
            if i:
                await asyncio.sleep((policies.delete_pause_ms or 0) / 1000)
            await self.streams.delete_ledgers([ledger_id])
            await self._at("mid_delete", ledger=ledger_id)

        def change(md: StreamMetadata) -> StreamMetadata:
            return dataclasses.replace(
                md, pending_deletes=tuple(x for x in md.pending_deletes if x not in doomed),
                cleaning={k: v for k, v in md.cleaning.items() if k not in dead})

        await self.store.update(namespace, name, change)
        return doomed

    async def read_segment(self, seg: Segment) -> list[rec.Record]:
        handle = await self.streams.bk.open_ledger(seg.ledger, recovery=False)
        last = handle.last_add_confirmed
        out: list[rec.Record] = []
        for start in range(0, last + 1, 1000):
            out.extend(rec.decode(x.payload) for x in await handle.read(start, min(last, start + 999)))
        return out

    async def clean(self, namespace: str, name: str, *, now_ms: int | None = None) -> CleanResult:
        await self.register()
        result = CleanResult(f"{namespace}/{name}")
        result.leftovers_deleted = await self.finish_leftovers(namespace, name)
        md = (await self.store.get(namespace, name)).value
        policies = await self.store.effective_policies(md)
        closed = md.closed_segments
        dirty = [s for s in closed if s.last is not None and s.last >= md.cleaned_to]
        result.cleaned_to = md.cleaned_to
        if not dirty:
            result.nothing_to_do = True
            return result

        # 2. the offset map, whole segments while they fit.
        offsets = OffsetMap(self.map_bytes, self.hash_fn)
        end = md.cleaned_to
        cache: dict[int, list[rec.Record]] = {}
        for seg in dirty:
            records = [r for r in await self.read_segment(seg) if r.position >= md.cleaned_to]
            keys = segment_keys(records)
            if not offsets.would_fit(keys):
                if offsets.size == 0:
                    raise CleanerError(f"stream {result.stream}: segment of ledger {seg.ledger} has {len(keys)} "
                                       f"keys, more than an offset map of {self.map_bytes} bytes holds; raise "
                                       f"the map size")
                break
            offsets.add_all(keys)
            cache[seg.ledger] = records
            assert seg.last is not None
            end = seg.last + 1
        result.map_keys = offsets.size
        await self._at("after_map", end=end)

        # 3. rewrite every closed segment below ``end``.
        sources = [s for s in closed if s.last is not None and s.last < end]
        horizon = (now_ms if now_ms is not None else self.streams.clock()) - (policies.delete_retention_ms or 0)
        total = sum(s.records for s in sources)
        result.old_ledgers = [s.ledger for s in sources]
        result.bytes_before = sum(s.bytes for s in sources)
        outputs: list[Segment] = []
        try:
            await self._rewrite(md, policies, sources, cache, offsets, horizon, total, result, outputs)
        except BaseException:
            await self.abandon(namespace, name, result.new_ledgers)
            raise
        result.bytes_after = sum(s.bytes for s in outputs)
        await self._at("before_swap")

        # 4. swap.
        old_ids = [s.ledger for s in sources]
        try:
            await self.swap(namespace, name, old_ids, outputs, end)
        except Conflict:
            result.lost_race = True
            await self.abandon(namespace, name, result.new_ledgers)
            log.info("cleaner %s lost the swap of %s to another change", self.cleaner_id, result.stream)
            return result
        result.swapped = True
        result.cleaned_to = end
        await self._at("after_swap")

        # 5. the old ledgers.
        await self.finish_leftovers(namespace, name)
        return result

    async def _rewrite(self, md: StreamMetadata, policies: Policies, sources: list[Segment],
                       cache: dict[int, list[rec.Record]], offsets: OffsetMap, horizon: int, total: int,
                       result: CleanResult, outputs: list[Segment]) -> None:
        roll_bytes = policies.roll_bytes or 64 * 1024 * 1024
        handle = None
        seg_first = 0
        seg_bytes = 0
        seg_max_ts: int | None = None
        seg_closed = 0
        done = 0

        async def close_output(last: int) -> None:
            nonlocal handle
            assert handle is not None
            await handle.close()
            # Ages carry over (retention counts from the newest source ledger's close, as Kafka keeps the
            # cleaned segment's last-modified time).
            outputs.append(Segment(handle.ledger_id, seg_first, last, records=handle.last_add_confirmed + 1,
                                   bytes=handle.length, created_ms=self.streams.clock(), closed_ms=seg_closed,
                                   max_timestamp=seg_max_ts, dense=False))
            handle = None

        for seg in sources:
            assert seg.last is not None
            records = cache.get(seg.ledger)
            if records is None:
                records = await self.read_segment(seg)
            pending = []
            seg_closed = max(seg_closed, seg.closed_ms or 0)
            for r in records:
                done += 1
                if retain(r, offsets, horizon):
                    if handle is None:
                        handle = await self.new_output(md, policies, result)
                        seg_first, seg_bytes, seg_max_ts, seg_closed = seg.first, 0, None, seg.closed_ms or 0
                    data = rec.encode(r)
                    pending.append(handle.append(data))
                    seg_bytes += len(data)
                    seg_max_ts = r.timestamp if seg_max_ts is None else max(seg_max_ts, r.timestamp)
                    result.records_kept += 1
                if done % 100 == 0:
                    await asyncio.gather(*pending)
                    pending.clear()
                    await self._at("mid_write", done=done)
                    if self.progress is not None:
                        self.progress(done, total)
            await asyncio.gather(*pending)
            result.records_read += len(records)
            if self.progress is not None:
                self.progress(done, total)
            if handle is not None and seg_bytes >= roll_bytes:
                await close_output(seg.last)
        if handle is not None:
            last = sources[-1].last
            assert last is not None
            await close_output(last)

    async def new_output(self, md: StreamMetadata, policies: Policies, result: CleanResult) -> LedgerHandle:
        ledger_id = await self.streams.bk.store.generate_ledger_id()

        def record(md: StreamMetadata) -> StreamMetadata:
            mine = md.cleaning.get(self.cleaner_id, ())
            return dataclasses.replace(md, cleaning={**md.cleaning, self.cleaner_id: (*mine, ledger_id)})

        await self.store.update(md.namespace, md.name, record)
        result.new_ledgers.append(ledger_id)
        handle = await self.streams.new_ledger(md, policies, ledger_id=ledger_id, role="cleaner")
        await self._at("ledger_created", ledger=ledger_id)
        return handle

    async def swap(self, namespace: str, name: str, old_ids: list[int], outputs: list[Segment], end: int) -> None:
        while True:
            current = await self.store.get(namespace, name)
            md = current.value
            head = [s.ledger for s in md.segments[:len(old_ids)]]
            if head != old_ids:
                raise Conflict(f"stream {md.full_name}: its head changed (another cleaner or retention)")
            new = dataclasses.replace(
                md, segments=(*outputs, *md.segments[len(old_ids):]), cleaned_to=max(md.cleaned_to, end),
                pending_deletes=(*md.pending_deletes, *old_ids),
                cleaning={k: v for k, v in md.cleaning.items() if k != self.cleaner_id}, epoch=md.epoch + 1)
            try:
                await self.store.put(new, current.version)
                return
            except Conflict:
                continue  # a writer rolled meanwhile: check the head again

    async def abandon(self, namespace: str, name: str, ledgers: list[int]) -> None:
        """Delete this pass's output ledgers and forget them."""
        for ledger_id in ledgers:
            try:
                await self.streams.bk.delete_ledger(ledger_id)
            except e.NoSuchLedger:
                pass

        def change(md: StreamMetadata) -> StreamMetadata | None:
            if self.cleaner_id not in md.cleaning:
                return None
            return dataclasses.replace(md, cleaning={k: v for k, v in md.cleaning.items() if k != self.cleaner_id})

        await self.store.update(namespace, name, change)
