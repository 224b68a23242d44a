"""Request semantics of the bookie protocol: what each operation does and which status it answers.

Protocol-neutral: it receives decoded requests (``bookie.protocol.messages``) and returns responses; the
listener encodes them back in the version they came in. Storage errors are mapped to BookKeeper's status
codes here and nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable
from time import perf_counter

from bookie._requests import AddStats, InFlightCounts
from bookie.config import BookieConfig
from bookie.limits import LimitHits
from bookie.protocol import messages as m
from bookie.protocol.codes import OperationType, StatusCode
from bookie.state import StateManager
from bookie.stats import BUCKETS, RequestStats
from bookie.storage import errors as se
from bookie.storage.engine import StorageEngine

log = logging.getLogger(__name__)

AUTH_DISABLED_PLUGIN = "AuthDisabledPlugin"

# Storage exceptions -> BookKeeper status codes (order matters: most specific first).
_ERROR_STATUS: tuple[tuple[type[Exception], StatusCode], ...] = (
    (se.NoLedgerError, StatusCode.ENOLEDGER),
    (se.NoEntryError, StatusCode.ENOENTRY),
    (se.FencedError, StatusCode.EFENCED),
    (se.MasterKeyMismatchError, StatusCode.EUA),
    (se.StorageThrottledError, StatusCode.ETOOMANYREQUESTS),
    (se.LedgerDirFullError, StatusCode.EREADONLY),
    (se.StorageIOError, StatusCode.EIO),
    (OSError, StatusCode.EIO),
)


# Request types with BookKeeper request stats (``RequestStats.KINDS``).
_STAT_KIND: dict[type, str] = {
    m.AddRequest: "add", m.ReadRequest: "read", m.BatchReadRequest: "read", m.ReadLacRequest: "read_lac",
    m.WriteLacRequest: "write_lac", m.ForceLedgerRequest: "force_ledger", m.GetBookieInfoRequest: "bookie_info",
}


def status_of(exc: BaseException) -> StatusCode:
    for kind, status in _ERROR_STATUS:
        if isinstance(exc, kind):
            return status
    return StatusCode.EBADREQ


class InFlight(InFlightCounts):
    """Counts requests of one kind in progress, and their bytes; knows when to refuse (pending limit) or
    pause reading (in-progress limit, or in-progress bytes). The counts are C fields (``InFlightCounts``): the
    request hot path counts the adds it takes in them."""

    def __init__(self, pending_limit: int, in_progress_limit: int, bytes_limit: int = 0) -> None:
        super().__init__(pending_limit, in_progress_limit, bytes_limit)
        self._released = asyncio.Event()

    @property
    def blocked(self) -> int:
        """Connections paused until a slot frees (BookKeeper's ``*_ENTRY_BLOCKED``)."""
        return self.waiting

    def _wake(self) -> None:
        """Called by ``leave`` while connections wait for a slot."""
        self._released.set()
        self._released.clear()

    async def wait_below_limit(self) -> None:
        self.waiting += 1
        try:
            while self.must_pause():
                await self._released.wait()
        finally:
            self.waiting -= 1


class RequestProcessor:
    """Executes requests against the storage engine under the bookie's state and backpressure rules."""

    def __init__(self, conf: BookieConfig, engine: StorageEngine, state: StateManager,
                 disk_space: Callable[[], tuple[int, int]]) -> None:
        self.conf = conf
        self.engine = engine
        self.state = state
        self.disk_space = disk_space
        # Adds in progress are the journal's queue (an add leaves once durable): journalQueueSize per journal
        # bounds them as much as maxAddsInProgressLimit, by pausing the connections that send them.
        queue_bound = conf.journal_queue_size * len(conf.journal_directories)
        in_progress = min(conf.max_adds_in_progress_limit or queue_bound, queue_bound)
        self.adds = InFlight(conf.max_pending_add_requests_per_thread, in_progress, conf.max_adds_in_progress_bytes)
        self.reads = InFlight(conf.max_pending_read_requests_per_thread, conf.max_reads_in_progress_limit)
        self.stats = RequestStats(conf.enable_statistics)
        # The adds of the request hot path record here (C), merged into ``stats`` when they are read.
        self.hot_adds = AddStats(conf.enable_statistics, *BUCKETS)
        # Parked long polls have their own count: waiting for a LAC, they must not take read slots.
        self.long_polls = InFlight(conf.max_parked_long_polls, 0)
        self.limits = LimitHits()
        self._handlers: dict[type, Callable[[m.Request], Awaitable[m.Response]]] = {
            m.AddRequest: self._add,  # type: ignore[dict-item]
            m.ReadRequest: self._read,  # type: ignore[dict-item]
            m.ReadLacRequest: self._read_lac,  # type: ignore[dict-item]
            m.WriteLacRequest: self._write_lac,  # type: ignore[dict-item]
            m.ForceLedgerRequest: self._force_ledger,  # type: ignore[dict-item]
            m.GetBookieInfoRequest: self._bookie_info,  # type: ignore[dict-item]
            m.GetListOfEntriesOfLedgerRequest: self._list_entries,  # type: ignore[dict-item]
            m.AuthRequest: self._auth,  # type: ignore[dict-item]
            m.StartTLSRequest: self._start_tls,  # type: ignore[dict-item]
            m.BatchReadRequest: self._batch_read,  # type: ignore[dict-item]
        }

    def counter_for(self, request: m.Request) -> InFlight | None:
        if isinstance(request, m.AddRequest):
            return self.adds
        if isinstance(request, m.ReadRequest) and _is_long_poll(request):
            return self.long_polls
        if isinstance(request, (m.ReadRequest, m.BatchReadRequest)):
            return self.reads
        return None

    async def process(self, request: m.Request, *, hold_slot: bool = False) -> m.Response:
        """The response to ``request`` (``admit`` then ``execute``)."""
        refusal = self.admit(request)
        if refusal is not None:
            return refusal
        return await self.execute(request, hold_slot=hold_slot)

    def admit(self, request: m.Request) -> m.Response | None:
        """Synchronously, before any work: the refusal to answer at once, or None with the request's
        in-progress slot taken (so a burst of frames sees the count grow as it is dispatched)."""
        if request.wire.version == 3 and request.wire.protocol_version != 3:
            return m.error_response(request, StatusCode.EBADVERSION)
        if type(request) not in self._handlers:
            return m.error_response(request, StatusCode.EBADREQ)
        bad = invalid_ids(request)
        if bad is not None:
            self.limits.hit("invalidIds", f"{type(request).__name__} refused with EBADREQ: {bad}")
            return m.error_response(request, StatusCode.EBADREQ)
        counter = self.counter_for(request)
        if counter is not None:
            if counter.over_pending_limit():
                if counter is self.adds:
                    self.stats.add_rejected += 1
                else:
                    self.stats.read_rejected += 1
                self.limits.hit(self._limit_name(counter), f"{counter.count} in progress, refusing "
                                f"{type(request).__name__} with ETOOMANYREQUESTS")
                return m.error_response(request, StatusCode.ETOOMANYREQUESTS)
            counter.enter(size_of(request))
        return None

    async def execute(self, request: m.Request, *, hold_slot: bool = False) -> m.Response:
        """Run an admitted request. With ``hold_slot`` the caller owns the in-progress slot ``admit`` took and
        releases it (``counter_for(request).leave(size_of(request))``) whatever happens, a read's once its
        response is written: a response waiting for a slow client still counts against
        maxReadsInProgressLimit."""
        handler = self._handlers[type(request)]
        try:
            return await self._guarded(handler, request)
        finally:
            counter = self.counter_for(request)
            if counter is not None and not hold_slot:
                counter.leave(size_of(request))

    def _limit_name(self, counter: InFlight) -> str:
        if counter is self.long_polls:
            return "maxParkedLongPolls"
        return "maxPendingAddRequestsPerThread" if counter is self.adds else "maxPendingReadRequestsPerThread"

    def try_read(self, r: m.ReadRequest) -> m.Response | None:
        """A plain read of an entry in memory (write cache or read cache), answered without a task: a reader
        catching up sends hundreds at once. Returns the response with the read's in-progress slot taken (the
        caller releases it once the response is written); None: this read needs the general path (fencing,
        long poll, last entry, an entry on disk, a refusal to count or log)."""
        if (r.fence or r.previous_lac is not None or r.entry_id < 0 or self.reads.over_pending_limit()
                or (r.wire.version == 3 and r.wire.protocol_version != 3) or invalid_ids(r) is not None):
            return None
        started = perf_counter()
        body = self.engine.read_cached(r.ledger_id, r.entry_id)
        if body is None:
            return None
        self.engine.dir_of(r.ledger_id).read_entry_stat.record_since(started)
        self.reads.enter(size_of(r))
        return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, r.entry_id, body=body,
                              max_lac=self.engine.last_add_confirmed(r.ledger_id))

    def record(self, request: m.Request, response: m.Response, started: float) -> None:
        """A request answered: its latency since ``started`` (``perf_counter()`` when it was decoded)
        and bytes. Request and processing latency are the same here: processing starts on arrival, and
        the answer is written in the same loop iteration it completes in."""
        kind = _STAT_KIND.get(type(request))
        if kind is None:
            return
        ok = response.status == StatusCode.EOK
        self.stats.request[kind].record((perf_counter() - started) * 1000.0, ok)
        if ok and kind == "read":
            if isinstance(response, m.ReadResponse):
                self.stats.read_bytes += len(response.body or b"")
            elif isinstance(response, m.BatchReadResponse):
                self.stats.read_bytes += sum(map(len, response.entries))
        elif ok and kind == "add":
            self.stats.write_bytes += len(request.body)  # type: ignore[union-attr]
        elif response.status == StatusCode.ENOENTRY and getattr(request, "entry_id", 0) == -1:
            self.stats.read_noentry += 1

    def drain_stats(self) -> None:
        """The hot path's add latencies and bytes merged into ``stats`` (before they are read or rotated)."""
        self.stats.write_bytes += self.hot_adds.drain_into(self.stats.add)

    def failure_response(self, request: m.Request, exc: BaseException) -> m.Response:
        status = status_of(exc)
        if status in (StatusCode.EIO, StatusCode.EBADREQ):
            log.warning("%s failed with %s: %r", type(request).__name__, status.name, exc)
        return m.error_response(request, status)

    async def _guarded(self, handler: Callable[[m.Request], Awaitable[m.Response]],
                       request: m.Request) -> m.Response:
        try:
            return await handler(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self.failure_response(request, exc)

    # --- adds
    def _refuse_write(self, high_priority: bool) -> bool:
        """Read-only bookies refuse writes, except high-priority (recovery) ones while disks allow."""
        return self.state.read_only and not (high_priority and self.state.available_for_high_priority_writes)

    async def _add(self, r: m.AddRequest) -> m.Response:
        if self._refuse_write(r.wire.high_priority or r.recovery):
            return m.AddResponse(r.wire, StatusCode.EREADONLY, r.ledger_id, r.entry_id)
        await self.engine.add_entry(r.body, r.master_key, recovery=r.recovery)
        return m.AddResponse(r.wire, StatusCode.EOK, r.ledger_id, r.entry_id)

    async def _write_lac(self, r: m.WriteLacRequest) -> m.Response:
        if self._refuse_write(False):
            return m.WriteLacResponse(r.wire, StatusCode.EREADONLY, r.ledger_id)
        await self.engine.write_explicit_lac(r.ledger_id, r.lac, r.master_key, r.body)
        return m.WriteLacResponse(r.wire, StatusCode.EOK, r.ledger_id)

    async def _force_ledger(self, r: m.ForceLedgerRequest) -> m.Response:
        await self.engine.force_ledger(r.ledger_id)
        return m.ForceLedgerResponse(r.wire, StatusCode.EOK, r.ledger_id)

    # --- reads
    async def _read(self, r: m.ReadRequest) -> m.Response:
        if r.fence:
            return await self._fencing_read(r)
        if _is_long_poll(r):
            return await self._long_poll_read(r)
        stat, started = self.engine.dir_of(r.ledger_id).read_entry_stat, perf_counter()
        try:
            body = await self.engine.read_entry(r.ledger_id, r.entry_id)
        except Exception:
            stat.record_since(started, success=False)
            raise
        stat.record_since(started)
        lac = self.engine.last_add_confirmed(r.ledger_id)
        return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, r.entry_id, body=body, max_lac=lac)

    async def _fencing_read(self, r: m.ReadRequest) -> m.Response:
        if not r.master_key:
            return m.ReadResponse(r.wire, StatusCode.EUA, r.ledger_id, r.entry_id)
        fenced = self.engine.fence(r.ledger_id, r.master_key)
        try:
            body = await self.engine.read_entry(r.ledger_id, r.entry_id)
        except (se.NoEntryError, se.NoLedgerError) as exc:
            # Answer at once, as BookKeeper does; the fence record still becomes durable in the background.
            fenced.add_done_callback(_log_fence_failure)
            return m.ReadResponse(r.wire, status_of(exc), r.ledger_id, r.entry_id)
        await fenced
        return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, r.entry_id, body=body,
                              max_lac=self.engine.last_add_confirmed(r.ledger_id))

    async def _long_poll_read(self, r: m.ReadRequest) -> m.Response:
        previous = r.previous_lac if r.previous_lac is not None else -1
        if r.piggyback and r.entry_id != -1:
            return m.ReadResponse(r.wire, StatusCode.EBADREQ, r.ledger_id, r.entry_id)
        timeout_ms = min(r.timeout_ms or 0, self.conf.max_long_poll_timeout_ms)
        lac = await self.engine.wait_for_lac(r.ledger_id, previous, timeout_ms / 1000)
        if lac <= previous:
            return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, r.entry_id, max_lac=lac)
        if not r.piggyback:
            body = await self.engine.read_entry(r.ledger_id, r.entry_id)
            return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, r.entry_id, body=body, max_lac=lac)
        wanted = previous + 1
        try:
            body = await self.engine.read_entry(r.ledger_id, wanted)
        except se.NoEntryError:
            return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, wanted, max_lac=lac)
        return m.ReadResponse(r.wire, StatusCode.EOK, r.ledger_id, wanted, body=body, max_lac=lac,
                              lac_update_timestamp=self.engine.lac_update_timestamp(r.ledger_id))

    async def _batch_read(self, r: m.BatchReadRequest) -> m.Response:
        if r.fence:
            if not r.master_key:
                return m.BatchReadResponse(r.wire, StatusCode.EUA, r.ledger_id, r.start_entry_id, r.request_id)
            await self.engine.fence(r.ledger_id, r.master_key)
        budget = min(r.max_size if r.max_size > 0 else m.MAX_BATCH_READ_SIZE, m.MAX_BATCH_READ_SIZE)
        budget -= m.BATCH_READ_RESPONSE_OVERHEAD
        entries: list[bytes] = []
        entry_id = r.start_entry_id
        while r.max_count <= 0 or len(entries) < r.max_count:
            try:
                body = await self.engine.read_entry(r.ledger_id, entry_id)
            except (se.NoEntryError, se.NoLedgerError):
                if not entries:
                    raise
                break
            budget -= len(body) + 4
            if budget < 0 and entries:
                break
            entries.append(body)
            entry_id += 1
        return m.BatchReadResponse(r.wire, StatusCode.EOK, r.ledger_id, r.start_entry_id, r.request_id,
                                   entries=tuple(entries))

    async def _read_lac(self, r: m.ReadLacRequest) -> m.Response:
        explicit = await self.engine.read_explicit_lac(r.ledger_id)
        try:
            last = await self.engine.read_entry(r.ledger_id, -1)
        except (se.NoEntryError, se.NoLedgerError):
            last = None
        if explicit is None and last is None:
            return m.ReadLacResponse(r.wire, StatusCode.ENOENTRY, r.ledger_id)
        return m.ReadLacResponse(r.wire, StatusCode.EOK, r.ledger_id, lac_body=explicit, last_entry_body=last)

    async def _list_entries(self, r: m.GetListOfEntriesOfLedgerRequest) -> m.Response:
        entry_ids = await self.engine.list_entries(r.ledger_id)
        from bookie.protocol.entry import encode_availability

        return m.GetListOfEntriesOfLedgerResponse(r.wire, StatusCode.EOK, r.ledger_id,
                                                  availability=encode_availability(entry_ids))

    # --- misc
    async def _bookie_info(self, r: m.GetBookieInfoRequest) -> m.Response:
        free, total = self.disk_space()
        return m.GetBookieInfoResponse(r.wire, StatusCode.EOK, total_disk_capacity=total,
                                       free_disk_space=free)

    async def _auth(self, r: m.AuthRequest) -> m.Response:
        return m.AuthResponse(r.wire, StatusCode.EOK, plugin_name=AUTH_DISABLED_PLUGIN, payload=b"")

    async def _start_tls(self, r: m.StartTLSRequest) -> m.Response:
        # TLS is not configured on this bookie (the listener upgrades the connection when it is): BookKeeper
        # answers the header and EBADREQ, without a StartTLSResponse.
        return m.ErrorResponse(r.wire, StatusCode.EBADREQ, OperationType.START_TLS)


def invalid_ids(request: m.Request) -> str | None:
    """Why the ids of ``request`` cannot be valid, or None. Ledger ids are never negative; an added entry id
    never is either (the journal's negative markers, such as a fence, must not arrive as an entry), and the
    ids in the entry's header are the request's; a read's entry id is -1 (the last entry) or more."""
    ledger_id = getattr(request, "ledger_id", 0)
    if ledger_id < 0:
        return f"negative ledger id {ledger_id}"
    if isinstance(request, m.AddRequest):
        if request.entry_id < 0:
            return f"negative entry id {request.entry_id} in an add"
        body_ids = _BODY_IDS.unpack_from(request.body)
        if body_ids != (request.ledger_id, request.entry_id):
            return f"entry header says {body_ids[0]}/{body_ids[1]}, request {request.ledger_id}/{request.entry_id}"
    elif isinstance(request, m.ReadRequest) and request.entry_id < -1:
        return f"entry id {request.entry_id} below -1 in a read"
    elif isinstance(request, m.BatchReadRequest) and request.start_entry_id < 0:
        return f"negative start entry id {request.start_entry_id}"
    return None


_BODY_IDS = struct.Struct(">qq")


def size_of(request: m.Request) -> int:
    """Bytes an in-progress request holds: an add's entry."""
    return len(request.body) if isinstance(request, m.AddRequest) else 0


def _is_long_poll(r: m.ReadRequest) -> bool:
    return not r.fence and r.previous_lac is not None and r.timeout_ms is not None


def _log_fence_failure(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("fence record failed to become durable: %r", fut.exception())
