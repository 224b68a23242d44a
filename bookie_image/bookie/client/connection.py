"""Connections to bookies: asyncio protocol, request/response matching, timeouts, per-bookie pool.

Requests are built and parsed by ``bookie.protocol.codec`` (the same codec the bookie uses). A v3 connection
matches responses by ``txnId``; a v2 connection by (operation, ledger id, entry id), oldest request first, as
BookKeeper's ``PerChannelBookieClient`` does. A ledger's v3 adds take a hot path in C (``_native.ClientStream``:
encoded into the connection's output and their answers matched there, each handed to its callback as a status
code, no Python object per request or answer); every other request goes through the codec. Frames made during
one loop iteration are sent with one ``write`` (cheap pipelining), or in 64 KiB writes while a larger burst is
still being made (``WRITE_EARLY_BYTES``); requests made before the TCP connection is up are queued and sent
once it is.

With ``ClientConfig.tls`` a connection starts with a v3 START_TLS, as BookKeeper's ``PerChannelBookieClient``
does (also on a v2 connection: BookKeeper's v2 clients read v3 until the START_TLS answer, then v2): requests
made meanwhile wait, the EOK answer hands the socket to ``loop.start_tls``, and they are sent inside TLS.
The TLS context is built once per client, in a thread (it reads the certificate files).

Everything here runs on the event loop and never blocks: a send returns a future at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import socket
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from bookie.client._native import ClientStream
from bookie.client.config import ClientConfig
from bookie.client.errors import BookieTimeout, BookieUnavailable, ProtocolNotSupported
from bookie.metadata import service_info
from bookie.protocol import messages as m
from bookie.protocol.client_codec import decode_response, encode_request
from bookie.protocol.codec import MalformedFrame
from bookie.protocol.codes import OperationType, StatusCode
from bookie.protocol.framing import FrameTooLarge
from bookie.tls import TLSConfigError

log = logging.getLogger(__name__)

R = TypeVar("R", bound=m.Response)
_ADD, _READ = 1, 2  # v2 matching keys (opcode)
# Requests are written at the end of the loop iteration that made them, or as soon as this many bytes of them
# are waiting. Without the second rule a burst of appends (a window's worth freed by one journal group's
# acknowledgements) left in one write once all of it was encoded, the bookie sat idle meanwhile, and the two
# processes took turns instead of working at once: about 0.5 core busy each, throughput bound by the sum of
# their CPU per entry (docs/benchmarks.md, "the client's writes"). 64 KiB did best of 16 to 256 KiB.
WRITE_EARLY_BYTES = 64 * 1024


AddressLookup = Callable[[str], Awaitable[bytes | None]]


class BookieAddressResolver:
    """Bookie id -> ``(host, port)``: the ``bookie-rpc`` endpoint the bookie published in its registration
    (``service_info``), else the id read as ``host:port``, like BookKeeper's ``DefaultBookieAddressResolver``.

    Published addresses are cached until a connection to them fails, so a bookie that comes back on a new IP
    (a rescheduled pod) is looked up again; fallbacks are never cached, the bookie may register later.
    """

    def __init__(self, lookup: AddressLookup | None = None) -> None:
        self._lookup = lookup
        self._cache: dict[str, tuple[str, int]] = {}

    async def resolve(self, bookie_id: str) -> tuple[str, int]:
        cached = self._cache.get(bookie_id)
        if cached is not None:
            return cached
        data: bytes | None = None
        if self._lookup is not None:
            try:
                data = await self._lookup(bookie_id)
            except Exception as exc:  # metadata unreachable: the id itself may still be an address
                log.debug("no service info for %s: %r", bookie_id, exc)
        address = service_info.address_of(bookie_id, data)
        if data:
            self._cache[bookie_id] = address
        return address

    def forget(self, bookie_id: str) -> None:
        self._cache.pop(bookie_id, None)


Answered = Callable[[m.Response | BaseException], None]
# A hot-path add's callback: (function, argument, ...), called as function(*arguments, outcome) with the add's
# status code (an int: 0 is EOK) or the BookieError that failed it.
AddCallback = tuple[Any, ...]


class _Callback:
    """Where a request's outcome goes when its sender gave a callback instead of waiting on a future: the
    answer is handed over as soon as it is read, failures one loop iteration later (a failed request may be
    failed while the connection closes, and its sender may then send again). For appends, which would
    otherwise pay a future, its done-callback and a scheduled loop callback per request."""

    __slots__ = ("answered", "finished", "loop")

    def __init__(self, answered: Answered, loop: asyncio.AbstractEventLoop) -> None:
        self.answered = answered
        self.loop = loop
        self.finished = False

    def done(self) -> bool:
        return self.finished

    def set_result(self, response: m.Response) -> None:
        self.finished = True
        try:
            self.answered(response)
        except Exception:  # the sender's fault: the connection goes on reading the other answers
            log.exception("the callback of a request failed on its answer %r", type(response).__name__)

    def set_exception(self, exc: BaseException) -> None:
        self.finished = True
        self.loop.call_soon(self.answered, exc)


class _Pending:
    __slots__ = ("deadline", "future", "key", "timeout", "txn")

    def __init__(self, future: asyncio.Future[m.Response] | _Callback, txn: int,
                 key: tuple[int, int, int] | None, timeout: float, deadline: float) -> None:
        self.future = future  # the sender's future, or its callback
        self.txn = txn
        self.key = key
        self.timeout = timeout
        self.deadline = deadline  # loop time at which the request fails with BookieTimeout


def _v2_key(request: m.Request) -> tuple[int, int, int]:
    if isinstance(request, m.AddRequest):
        return (_ADD, request.ledger_id, request.entry_id)
    if isinstance(request, m.ReadRequest):
        return (_READ, request.ledger_id, request.entry_id)
    raise ProtocolNotSupported(f"{type(request).__name__} needs the v3 protocol")


def _v2_response_key(response: m.Response) -> tuple[int, int, int] | None:
    if isinstance(response, m.AddResponse):
        return (_ADD, response.ledger_id, response.entry_id)
    if isinstance(response, m.ReadResponse):
        return (_READ, response.ledger_id, response.entry_id)
    return None


def _answers_start_tls(response: m.Response) -> bool:
    """The START_TLS answer: EOK with a StartTLSResponse, or (TLS not configured) the header and a status."""
    return isinstance(response, m.StartTLSResponse) or (
        isinstance(response, m.ErrorResponse) and response.operation == OperationType.START_TLS)


def _tell(callback: AddCallback, outcome: int | BaseException) -> None:
    callback[0](*callback[1:], outcome)


def _answer_with_status(callback: AddCallback, outcome: m.Response | BaseException) -> None:
    """An add answered through the codec, told the way the hot path tells: its status code, or the error."""
    _tell(callback, outcome if isinstance(outcome, BaseException) else int(outcome.status))


def _retrieve(future: asyncio.Future[m.Response]) -> None:
    if not future.cancelled():
        future.exception()


def _fail_request(future: asyncio.Future[m.Response] | _Callback, exc: BaseException) -> None:
    """Fail a request, a future's exception marked retrieved: an abandoned request (a speculative read
    answered elsewhere, an add of a finished entry) must not log "exception was never retrieved". Only failed
    futures get that callback: one more scheduled callback per answered request costs an append's CPU."""
    if future.done():
        return
    if isinstance(future, asyncio.Future):
        future.add_done_callback(_retrieve)
    future.set_exception(exc)


class BookieConnection(asyncio.Protocol):
    """One TCP connection to one bookie, speaking v3 (``version=3``) or v2."""

    def __init__(self, bookie_id: str, version: int, max_frame_size: int, add_timeout_s: float = 60.0) -> None:
        self.bookie_id = bookie_id
        self.version = version
        self.add_timeout_s = add_timeout_s  # every ledger add's (ClientConfig.add_timeout_s): for its error's text
        # TLS: the context and the host to verify, set before connecting; ``_starting_tls`` holds the requests
        # back from the START_TLS request until the handshake has ended.
        self.tls_context: ssl.SSLContext | None = None
        self.server_hostname: str | None = None
        self.start_tls_timeout_s = 10.0
        self._starting_tls = False
        self._tls_timer: asyncio.TimerHandle | None = None
        self._upgrading: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        # Frames in, requests out, and the hot path's adds (their txn ids come from it too). It tells this
        # connection when output waits (a flush to schedule, or enough to write now) and when an add's deadline
        # comes before the timer's.
        self.stream = ClientStream(max_frame_size)
        self.stream.write_early = WRITE_EARLY_BYTES
        self.stream.takes_adds = version == 3
        self.stream.on_output = self._output_waiting
        self.stream.on_output_full = self._write_out
        self.stream.on_deadline = self._arm_deadline_timer
        self._transport: asyncio.Transport | None = None
        self._by_txn: dict[int, _Pending] = {}
        self._by_key: dict[tuple[int, int, int], deque[_Pending]] = {}
        # One timer per connection, at the earliest deadline of its pending requests, rather than one per
        # request: a timer's creation, heap push and cancellation cost about a tenth of an append's CPU.
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._deadline_timer_at = 0.0
        self.closed = False
        self.failure: BaseException | None = None

    # ------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is not an asyncio.Transport subclass (the bookie process runs uvloop).
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.closed:
            transport.abort()
            return
        if self.tls_context is not None:
            self._send_start_tls(transport)
            return
        self._schedule_flush()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.stream.feed(data)  # the answers to hot-path adds are handed over inside
        except FrameTooLarge as exc:
            self._fail(BookieUnavailable(f"bookie {self.bookie_id} sent a bad frame: {exc}",
                                         bookie=self.bookie_id))
            return
        for index, frame in enumerate(frames):
            try:
                response = decode_response(frame)
            except MalformedFrame as exc:
                self._fail(BookieUnavailable(f"bookie {self.bookie_id} sent an undecodable response: {exc}",
                                             bookie=self.bookie_id))
                return
            if self._starting_tls and _answers_start_tls(response):
                self._start_tls_answered(response, more=index + 1 < len(frames))
                return  # the next bytes are TLS records, read by the TLS transport
            self._dispatch(response)

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f": {exc}" if exc else ""
        self._fail(BookieUnavailable(f"connection to bookie {self.bookie_id} lost{reason}",
                                     bookie=self.bookie_id))

    # ------------------------------------------------------------ requests

    @property
    def in_flight(self) -> int:
        return len(self._by_txn) + sum(len(q) for q in self._by_key.values()) + self.stream.pending

    def send_add(self, ledger_id: int, entry_id: int, master_key: bytes, body: bytes, callback: AddCallback,
                 timeout: float) -> None:
        """A ledger's add (not a recovery add), the hot path: ``callback[0](*callback[1:], outcome)`` gets the
        add's status code as it is read, or a ``BookieError`` on a later loop iteration. v2 connections encode
        and match it in Python."""
        if self.closed or self.version != 3:
            self.send_then(lambda w: m.AddRequest(w, ledger_id, entry_id, master_key, body), timeout,
                           functools.partial(_answer_with_status, callback))
            return
        self.stream.send_add(ledger_id, entry_id, master_key, body, callback, self._loop.time() + timeout)

    def send(self, make: Callable[[m.Wire], m.Request], timeout: float, *,
             high_priority: bool = False) -> asyncio.Future[m.Response]:
        """Encode ``make(wire)`` and send it; the future gets the response or a ``BookieError``."""
        future: asyncio.Future[m.Response] = self._loop.create_future()
        self._enqueue(future, make, timeout, high_priority)
        return future

    def send_then(self, make: Callable[[m.Wire], m.Request], timeout: float, answered: Answered, *,
                  high_priority: bool = False) -> None:
        """``send`` for the hot path: ``answered(response)`` is called as the answer is read, or
        ``answered(error)`` with a ``BookieError`` on a later loop iteration."""
        self._enqueue(_Callback(answered, self._loop), make, timeout, high_priority)

    def _enqueue(self, future: asyncio.Future[m.Response] | _Callback, make: Callable[[m.Wire], m.Request],
                 timeout: float, high_priority: bool) -> None:
        if self.closed:
            _fail_request(future, self.failure or BookieUnavailable(
                f"connection to bookie {self.bookie_id} is closed", bookie=self.bookie_id))
            return
        deadline = self._loop.time() + timeout
        if self.version == 3:
            txn = self.stream.txn()
            request = make(m.Wire.v3(txn, high_priority))
            self._by_txn[txn] = _Pending(future, txn, None, timeout, deadline)
        else:
            request = make(m.Wire.v2(high_priority))
            key = _v2_key(request)
            queue = self._by_key.get(key)
            if queue is None:
                queue = self._by_key[key] = deque()
            queue.append(_Pending(future, 0, key, timeout, deadline))
        if self._deadline_timer is None or deadline < self._deadline_timer_at:
            self._arm_deadline_timer(deadline)
        self.stream.write(encode_request(request))  # which schedules a flush, or writes at once

    def _pending_requests(self) -> list[_Pending]:
        return [*self._by_txn.values(), *(p for q in self._by_key.values() for p in q)]

    def _arm_deadline_timer(self, at: float) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._deadline_timer, self._deadline_timer_at = self._loop.call_at(at, self._expire_overdue), at
        self.stream.armed_deadline = at

    def _expire_overdue(self) -> None:
        """Fail the requests past their deadline; the timer then waits for the earliest deadline left."""
        self._deadline_timer = None
        self.stream.armed_deadline = math.inf
        now = self._loop.time()
        pendings = self._pending_requests()
        for pending in pendings:
            if pending.deadline <= now:
                self._expire(pending)
        for callback in self.stream.expire(now):
            self._loop.call_soon(_tell, callback, self._timeout_error(self.add_timeout_s))
        left = [p.deadline for p in pendings if p.deadline > now]
        hot = self.stream.earliest_deadline()
        if hot is not None:
            left.append(hot)
        if left and not self.closed:
            self._arm_deadline_timer(min(left))

    def _schedule_flush(self) -> None:
        if not self.stream.flush_requested and self._transport is not None:
            self.stream.flush_requested = True
            self._loop.call_soon(self._flush)

    def _output_waiting(self) -> None:
        """The stream has output and no flush scheduled (it marked one requested): schedule it, once connected."""
        if self._transport is None:
            self.stream.flush_requested = False  # connection_made schedules it
            return
        self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self.stream.flush_requested = False
        self._write_out()

    def _write_out(self) -> None:
        if self._transport is not None and not self.closed and not self._starting_tls:
            data = self.stream.take_output()
            if data is not None:
                self._transport.write(data)

    # ------------------------------------------------------------ TLS

    def _send_start_tls(self, transport: asyncio.Transport) -> None:
        """The first frame of a TLS connection: v3 START_TLS (whatever this connection's version)."""
        self._starting_tls = True
        txn = self.stream.txn()
        transport.write(encode_request(m.StartTLSRequest(m.Wire.v3(txn))))
        self._tls_timer = self._loop.call_later(self.start_tls_timeout_s, self._start_tls_timed_out)

    def _start_tls_timed_out(self) -> None:
        if self._starting_tls:
            self._fail(BookieUnavailable(f"no TLS with bookie {self.bookie_id} within "
                                         f"{self.start_tls_timeout_s:g}s of START_TLS", bookie=self.bookie_id))

    def _start_tls_answered(self, response: m.Response, *, more: bool) -> None:
        if response.status != StatusCode.EOK:
            self._fail(BookieUnavailable(f"bookie {self.bookie_id} refused START_TLS with {response.status.name} "
                                         f"(no TLS configured on it?)", bookie=self.bookie_id,
                                         status=response.status))
            return
        if more or self.stream.buffered or self._transport is None:
            self._fail(BookieUnavailable(f"bookie {self.bookie_id} sent data after its START_TLS answer",
                                         bookie=self.bookie_id))
            return
        transport, context = self._transport, self.tls_context
        assert context is not None
        transport.pause_reading()  # the ClientHello is sent by start_tls; the answer is for it to read
        task = self._loop.create_task(self._upgrade(transport, context))
        self._upgrading = task

    async def _upgrade(self, transport: asyncio.Transport, context: ssl.SSLContext) -> None:
        try:
            secure = await self._loop.start_tls(transport, self, context, server_hostname=self.server_hostname,
                                                ssl_handshake_timeout=self.start_tls_timeout_s)
        except Exception as exc:  # ssl.SSLError, a reset, a timeout: the connection fails, its requests with it
            why = exc.reason if isinstance(exc, ssl.SSLError) and exc.reason else repr(exc)
            self._fail(BookieUnavailable(f"TLS handshake with bookie {self.bookie_id} failed: {why}",
                                         bookie=self.bookie_id))
            return
        if secure is None or self.closed:
            return
        self._transport = secure
        self._starting_tls = False
        if self._tls_timer is not None:
            self._tls_timer.cancel()
        self._schedule_flush()

    def _dispatch(self, response: m.Response) -> None:
        if response.wire.version == 3:
            pending = self._by_txn.pop(response.wire.txn_id, None)
            if pending is None and (callback := self.stream.take(response.wire.txn_id)) is not None:
                # a hot-path add answered with a bare status (a refusal: the header and EUA, say)
                _tell(callback, int(response.status))
                return
        else:
            key = _v2_response_key(response)
            queue = self._by_key.get(key) if key is not None else None
            pending = queue.popleft() if queue else None
            if queue is not None and not queue and key is not None:
                del self._by_key[key]
        if pending is None:
            return  # answer to a request that already timed out
        if not pending.future.done():
            pending.future.set_result(response)

    def _forget(self, pending: _Pending) -> None:
        if pending.key is None:
            self._by_txn.pop(pending.txn, None)
            return
        queue = self._by_key.get(pending.key)
        if queue is not None:
            with contextlib.suppress(ValueError):
                queue.remove(pending)
            if not queue:
                del self._by_key[pending.key]

    def _expire(self, pending: _Pending) -> None:
        self._forget(pending)
        _fail_request(pending.future, self._timeout_error(pending.timeout))

    def _timeout_error(self, timeout: float) -> BookieTimeout:
        return BookieTimeout(f"bookie {self.bookie_id} did not answer within {timeout:g}s", bookie=self.bookie_id)

    def _fail(self, exc: BaseException) -> None:
        """Close the connection and fail every pending request with ``exc``."""
        if not self.closed:
            self.closed = True
            self.failure = exc
        if self._tls_timer is not None:
            self._tls_timer.cancel()
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        if self._upgrading is not None and self._upgrading is not asyncio.current_task():
            self._upgrading.cancel()
        if self._transport is not None:
            self._transport.abort()
        pendings = self._pending_requests()
        self._by_txn.clear()
        self._by_key.clear()
        for pending in pendings:
            _fail_request(pending.future, exc)
        for callback in self.stream.fail_all():  # told one loop iteration later, as _Callback does
            self._loop.call_soon(_tell, callback, exc)

    def close(self) -> None:
        self._fail(BookieUnavailable(f"connection to bookie {self.bookie_id} closed by the client",
                                     bookie=self.bookie_id))


class BookieHealth:
    """Error counts per bookie; a bookie with too many recent errors is quarantined for a while."""

    def __init__(self, threshold: int, window_s: float, quarantine_s: float) -> None:
        self.threshold = threshold
        self.window_s = window_s
        self.quarantine_s = quarantine_s
        self._errors: dict[str, deque[float]] = {}
        self._quarantined: dict[str, float] = {}

    def record_error(self, bookie_id: str) -> None:
        now = time.monotonic()
        errors = self._errors.setdefault(bookie_id, deque())
        errors.append(now)
        while errors and errors[0] < now - self.window_s:
            errors.popleft()
        if len(errors) >= self.threshold and bookie_id not in self._quarantined:
            log.warning("quarantining bookie %s for %.0fs after %d errors in %.0fs", bookie_id,
                        self.quarantine_s, len(errors), self.window_s)
            self._quarantined[bookie_id] = now + self.quarantine_s
            errors.clear()

    def quarantined(self) -> set[str]:
        now = time.monotonic()
        for bookie_id, until in list(self._quarantined.items()):
            if until <= now:
                del self._quarantined[bookie_id]
        return set(self._quarantined)

    def is_quarantined(self, bookie_id: str) -> bool:
        return bookie_id in self.quarantined()


class BookieClient:
    """Connection pool: ``connections_per_bookie`` connections per bookie, opened on first use.

    ``channel`` (usually the ledger id) picks the connection, so one ledger's requests to one bookie are
    always sent, and answered, in order.
    """

    def __init__(self, config: ClientConfig, resolver: BookieAddressResolver | None = None) -> None:
        self.config = config
        self.resolver = resolver or BookieAddressResolver()
        self.version = 2 if config.use_v2_protocol else 3
        self.health = BookieHealth(config.bookie_error_threshold, config.bookie_error_window_s,
                                   config.bookie_quarantine_s)
        self._conns: dict[tuple[str, int], BookieConnection] = {}
        self._connecting: set[asyncio.Task[None]] = set()
        self._closed = False
        self._tls_context: asyncio.Future[ssl.SSLContext] | None = None

    def connection(self, bookie_id: str, channel: int = 0) -> BookieConnection:
        index = channel % max(1, self.config.connections_per_bookie)
        conn = self._conns.get((bookie_id, index))
        if conn is None or conn.closed:
            if conn is not None:  # the bookie may be back elsewhere (a rescheduled pod): look it up again
                self.resolver.forget(bookie_id)
            conn = self._open(bookie_id, index)
        return conn

    def _open(self, bookie_id: str, index: int) -> BookieConnection:
        conn = BookieConnection(bookie_id, self.version, self.config.max_frame_size, self.config.add_timeout_s)
        self._conns[(bookie_id, index)] = conn
        if self._closed:
            conn.close()
            return conn
        task = asyncio.get_running_loop().create_task(self._connect(conn))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)
        return conn

    async def _connect(self, conn: BookieConnection) -> None:
        loop = asyncio.get_running_loop()
        try:
            if self.config.tls is not None:
                conn.tls_context = await self.tls_context()
                conn.start_tls_timeout_s = self.config.start_tls_timeout_s
            host, port = await self.resolver.resolve(conn.bookie_id)
            conn.server_hostname = host
            async with asyncio.timeout(self.config.connect_timeout_s):
                await loop.create_connection(lambda: conn, host, port)
        except TLSConfigError as exc:
            conn._fail(BookieUnavailable(f"cannot connect to bookie {conn.bookie_id} with TLS: {exc}",
                                         bookie=conn.bookie_id))
        except (OSError, TimeoutError, ValueError) as exc:
            self.resolver.forget(conn.bookie_id)
            conn._fail(BookieUnavailable(f"cannot connect to bookie {conn.bookie_id}: {exc!r}",
                                         bookie=conn.bookie_id))

    async def tls_context(self) -> ssl.SSLContext:
        """The client's TLS context, built once (in a thread: it reads the certificate files). Raises
        ``TLSConfigError`` naming the key of a file that does not load."""
        tls = self.config.tls
        assert tls is not None
        if self._tls_context is None:
            self._tls_context = asyncio.ensure_future(asyncio.to_thread(tls.load))
        return await asyncio.shield(self._tls_context)

    def send(self, bookie_id: str, channel: int, make: Callable[[m.Wire], m.Request], timeout: float, *,
             high_priority: bool = False) -> asyncio.Future[m.Response]:
        return self.connection(bookie_id, channel).send(make, timeout, high_priority=high_priority)

    # ------------------------------------------------------------ typed helpers

    def add_entry(self, bookie_id: str, ledger_id: int, entry_id: int, master_key: bytes, body: bytes, *,
                  recovery: bool = False, timeout: float | None = None) -> asyncio.Future[m.Response]:
        return self.send(
            bookie_id, ledger_id,
            lambda w: m.AddRequest(w, ledger_id, entry_id, master_key, body, recovery=recovery),
            timeout or self.config.add_timeout_s, high_priority=recovery)

    def add_entry_then(self, bookie_id: str, ledger_id: int, entry_id: int, master_key: bytes, body: bytes,
                       callback: AddCallback, *, recovery: bool = False) -> None:
        """A ledger's append to one bookie: ``callback[0](*callback[1:], outcome)`` gets the add's status code,
        or the ``BookieError`` that failed it (``BookieConnection.send_add``; recovery adds, high priority, are
        sent through the codec)."""
        conn = self.connection(bookie_id, ledger_id)
        if not recovery:
            conn.send_add(ledger_id, entry_id, master_key, body, callback, self.config.add_timeout_s)
            return
        conn.send_then(lambda w: m.AddRequest(w, ledger_id, entry_id, master_key, body, recovery=True),
                       self.config.add_timeout_s, functools.partial(_answer_with_status, callback),
                       high_priority=True)

    def read_entry(self, bookie_id: str, ledger_id: int, entry_id: int, *, fence: bool = False,
                   master_key: bytes | None = None, previous_lac: int | None = None,
                   long_poll_timeout_ms: int | None = None, piggyback: bool = False,
                   timeout: float | None = None) -> asyncio.Future[m.Response]:
        if previous_lac is not None and self.version == 2:
            raise ProtocolNotSupported("long-poll reads need the v3 protocol")
        return self.send(
            bookie_id, ledger_id,
            lambda w: m.ReadRequest(w, ledger_id, entry_id, fence=fence, master_key=master_key,
                                    previous_lac=previous_lac, timeout_ms=long_poll_timeout_ms,
                                    piggyback=piggyback),
            timeout or self.config.read_timeout_s, high_priority=fence)

    def read_lac(self, bookie_id: str, ledger_id: int) -> asyncio.Future[m.Response]:
        self._need_v3("explicit LAC")
        return self.send(bookie_id, ledger_id, lambda w: m.ReadLacRequest(w, ledger_id),
                         self.config.read_timeout_s)

    def write_lac(self, bookie_id: str, ledger_id: int, lac: int, master_key: bytes,
                  body: bytes) -> asyncio.Future[m.Response]:
        self._need_v3("explicit LAC")
        return self.send(bookie_id, ledger_id, lambda w: m.WriteLacRequest(w, ledger_id, lac, master_key, body),
                         self.config.add_timeout_s)

    def force_ledger(self, bookie_id: str, ledger_id: int) -> asyncio.Future[m.Response]:
        self._need_v3("force ledger")
        return self.send(bookie_id, ledger_id, lambda w: m.ForceLedgerRequest(w, ledger_id),
                         self.config.add_timeout_s)

    def get_bookie_info(self, bookie_id: str, requested: int = 3) -> asyncio.Future[m.Response]:
        self._need_v3("bookie info")
        return self.send(bookie_id, 0, lambda w: m.GetBookieInfoRequest(w, requested), self.config.read_timeout_s)

    def list_entries(self, bookie_id: str, ledger_id: int) -> asyncio.Future[m.Response]:
        self._need_v3("list of entries")
        return self.send(bookie_id, ledger_id, lambda w: m.GetListOfEntriesOfLedgerRequest(w, ledger_id),
                         self.config.read_timeout_s)

    def _need_v3(self, what: str) -> None:
        if self.version == 2:
            raise ProtocolNotSupported(f"{what} needs the v3 protocol (client configured for v2)")

    def close_bookie(self, bookie_id: str) -> None:
        """Drop the connections to one bookie (pending requests fail)."""
        for key in [k for k in self._conns if k[0] == bookie_id]:
            self._conns.pop(key).close()

    async def close(self) -> None:
        self._closed = True
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        for task in list(self._connecting):
            task.cancel()
        if self._connecting:
            await asyncio.gather(*self._connecting, return_exceptions=True)
