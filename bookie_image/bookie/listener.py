"""The bookie's TCP listener: one asyncio protocol per connection.

Reads land straight in the connection's ``RequestStream`` (``bookie._requests``, C; asyncio's buffered protocol,
so received bytes are not copied on the way), which splits them into
frames and takes the adds that need nothing but storage straight to the storage engine, answering each once
the journal has made it durable (the request hot path: no Python object per add). An add that finds its write
cache full is held there, with the connection's adds behind it, and offered again each time a checkpoint swaps
the caches (``_wait_for_room``), or refused ETOOMANYREQUESTS after dbStorage_maxThrottleTimeMs, as BookKeeper's
DbLedgerStorage throttles; requests other than adds go on meanwhile. Every other frame comes
back here in order: it is decoded (v2 or v3, detected per frame), handed to the processor, and its encoded
response written when it completes. Responses may leave out of order, as in BookKeeper (v3 matches by txnId,
v2 by ledger/entry/op). A malformed or oversized frame closes that connection only.

Backpressure: a connection is not read while the bookie's in-progress limits are reached, nor while its
unsent responses exceed ``maxUnsentResponseBytesPerConnection`` (the transport's ``pause_writing``); frames
already received wait in the request stream. A read keeps its in-progress slot until its response is
written, and responses written while the connection is over its budget keep theirs until it drains, so a
client that never reads its socket holds at most the budget plus ``maxReadsInProgressLimit`` responses.
With ``waitTimeoutOnResponseBackpressureMs`` and ``closeChannelOnResponseTimeout`` a connection that drains
nothing for that long is closed.

TLS (``bookie.security``): a v3 START_TLS is answered EOK in plaintext, and the same socket is handed to
``loop.start_tls`` in the same callback (the client sends its ClientHello once it reads that answer), with
reading paused so that no TLS byte reaches the frame reader. Frames sent after START_TLS but before the
handshake are a protocol error (the Java client queues its requests until the handshake ends). Until a
connection is authenticated (authorization or ``onlySecureClientsAllowed`` configured), requests other than
START_TLS get EUA, as from BookKeeper's ``AuthHandler``: v3 the echoed header and EUA, v2 adds and reads EUA,
any other v2 request closes the connection.

Before its first complete request as an authenticated client (with no authentication configured: its first
complete frame), a connection is pre-authentication and is bounded more tightly, since it may be anyone's:
``unauthenticatedTimeoutMs`` closes it when that request does not come (idle, or dribbling a partial frame), and
the incomplete frames of all such connections together may hold at most ``unauthenticatedBufferBytes`` (each at
most ``UNAUTHENTICATED_FRAME_BYTES`` where authentication is configured: its first frame is START_TLS), so a flood
of connections each holding part of a large frame costs a bounded amount of memory (docs/limits.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import struct
import weakref
from time import perf_counter
from typing import Any

from bookie._requests import RequestStream
from bookie.processor import InFlight, RequestProcessor, size_of
from bookie.protocol import codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.framing import FrameTooLarge
from bookie.security import HANDSHAKE_TIMEOUT_S, BookieSecurity

log = logging.getLogger(__name__)

_LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset and drops unsent data
# Where authentication is configured, the frames before it (START_TLS, AUTH) are small: more is not a client.
UNAUTHENTICATED_FRAME_BYTES = 64 * 1024


class Connections(set["BookieConnection"]):
    """The bookie's open connections, and the incomplete-frame bytes its pre-authentication ones hold."""

    unauthenticated_bytes = 0


class BookieConnection(asyncio.BufferedProtocol):
    def __init__(self, processor: RequestProcessor, max_frame_size: int,
                 connections: Connections, security: BookieSecurity | None = None) -> None:
        self.processor = processor
        self.security = security
        # Served from the start unless the bookie authorizes connections (then: once TLS and the role check pass).
        self.authenticated = security is None or security.open_at_connect
        self.secure = False  # TLS is up on this connection
        self._upgrading = False  # between the START_TLS answer and the end of the handshake
        self._refusal = ""  # why an unauthenticated connection is refused (logged once per connection)
        self.conf = processor.conf
        # The stream calls back through a weak reference: with a bound method, the stream and this connection
        # would form a cycle, and a closed connection's frame buffer (up to a frame's size) would stay allocated
        # until the cyclic garbage collector ran, which a flood of closed connections outpaces.
        this = weakref.ref(self)

        def hot_add_failed(*args: Any) -> None:
            connection = this()
            if connection is not None:
                connection._hot_add_failed(*args)

        self.requests = RequestStream(max_frame_size, processor.engine.write_path, processor.adds, processor.state,
                                      processor.hot_adds, hot_add_failed, self.conf.db_storage_max_throttle_time_ms)
        self.requests.takes_adds = self.authenticated
        self.connections = connections
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.tasks: set[asyncio.Task[Any]] = set()
        self._room_wait: asyncio.Task[None] | None = None  # held adds waiting for room in the write cache
        self._paused = False  # an in-progress limit is reached
        self._write_paused = False  # unsent responses over budget (pause_writing .. resume_writing)
        self._reading_paused = False
        self._outgoing: list[bytes] = []
        self._outgoing_slots = 0  # read slots of the responses in _outgoing
        self._held_slots = 0  # read slots of responses written while over budget: released once drained
        self._stall_timer: asyncio.TimerHandle | None = None
        self._watch_timer: asyncio.TimerHandle | None = None  # idle timeout and partial-frame deadline
        self._last_activity = 0.0
        self._partial_since: float | None = None
        self.client_host = ""
        self.pre_auth = True  # no complete request as an authenticated client yet
        self._pre_auth_bytes = 0  # this connection's share of connections.unauthenticated_bytes
        self._connected_at = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCP transport is not a subclass of asyncio.Transport but has its methods.
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = str(peer)
        self.client_host = peer[0] if isinstance(peer, tuple) else self.peer
        refusal = self._over_connection_limit(self.client_host)
        if refusal is not None:
            self.processor.limits.hit(*refusal)
            transport.abort()  # type: ignore[attr-defined]  # every TCP transport has it
            return
        budget = self.conf.max_unsent_response_bytes_per_connection
        transport.set_write_buffer_limits(high=budget, low=budget // 2)  # type: ignore[attr-defined]
        self.requests.write = transport.write  # type: ignore[attr-defined]
        self.connections.add(self)
        self._last_activity = self._connected_at = asyncio.get_running_loop().time()
        self._schedule_watch()

    def _over_connection_limit(self, host: str) -> tuple[str, str] | None:
        """(limit, detail) when accepting this connection would exceed a connection limit."""
        total, per_host = self.conf.max_connections, self.conf.max_connections_per_client_address
        if 0 < total <= len(self.connections):
            return "maxConnections", f"{len(self.connections)} connections open, closing the one from {self.peer}"
        if per_host:
            same = sum(1 for c in self.connections if c.client_host == host)
            if same >= per_host:
                return "maxConnectionsPerClientAddress", f"{same} connections from {host}, closing {self.peer}"
        return None

    # --- idle timeout and partial-frame deadline: one timer per connection, rescheduled lazily
    def _schedule_watch(self) -> None:
        timeouts = [self.conf.connection_idle_timeout_ms, self.conf.partial_frame_timeout_ms]
        if self.pre_auth:
            timeouts.append(self.conf.unauthenticated_timeout_ms)
        delays = [ms / 1000 for ms in timeouts if ms > 0]
        if delays and self._watch_timer is None and self.transport is not None:
            self._watch_timer = asyncio.get_running_loop().call_later(min(delays), self._watch)

    def _watch(self) -> None:
        self._watch_timer = None
        if self.transport is None:
            return
        now = asyncio.get_running_loop().time()
        idle_ms, partial_ms = self.conf.connection_idle_timeout_ms, self.conf.partial_frame_timeout_ms
        pre_auth_ms = self.conf.unauthenticated_timeout_ms
        if self.pre_auth and pre_auth_ms and now - self._connected_at >= pre_auth_ms / 1000:
            self._close_bad(f"no authenticated request within {pre_auth_ms} ms of connecting",
                            "unauthenticatedTimeoutMs")
            return
        if partial_ms and self._partial_since is not None and now - self._partial_since >= partial_ms / 1000:
            self._close_bad("incomplete frame held too long", "partialFrameTimeoutMs")
            return
        busy = (self.tasks or self.requests.has_frame or self.requests.pending or self._outgoing
                or self.transport.get_write_buffer_size())
        if idle_ms and not busy and now - self._last_activity >= idle_ms / 1000:
            self.processor.limits.hit("connectionIdleTimeoutMs", f"{self.peer} idle for {idle_ms} ms: closing")
            self.transport.close()
            return
        self._schedule_watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.discard(self)
        self._hold_pre_auth(0)
        self.transport = None
        # Adds the hot path took still complete in storage; their answers have nowhere to go.
        self.requests.write = None
        self.requests.takes_adds = False
        self.requests.drop_held()
        if self._watch_timer is not None:
            self._watch_timer.cancel()
            self._watch_timer = None
        # Nobody will read the answers: parked long polls and reads stop now (the journal still completes
        # adds and fences already queued: cancelling their wait does not withdraw them).
        for task in list(self.tasks):
            task.cancel()
        self._cancel_stall_timer()
        self._release_slots(self._held_slots + self._outgoing_slots)
        self._held_slots = self._outgoing_slots = 0
        self._outgoing.clear()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.requests.receive_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            self.requests.received(nbytes)
        except FrameTooLarge as exc:
            self._close_bad(f"frame too large: {exc}")
            return
        if self.pre_auth and not self._within_pre_auth_budget(nbytes):
            return
        self._last_activity = now = asyncio.get_running_loop().time()
        if not self.requests.buffered:
            self._partial_since = None
        elif self.requests.has_frame or self._partial_since is None:
            self._partial_since = now  # a new incomplete frame started
        self._run_backlog()

    def _within_pre_auth_budget(self, nbytes: int) -> bool:
        """Account a pre-authentication connection's incomplete frame; False when it was closed for it. A frame
        completed by an authenticated connection ends its pre-authentication (the hot path may have taken it
        already, so completion is seen as fewer held bytes than were received)."""
        held = self.requests.buffered
        if self.authenticated and (self.requests.has_frame or held < self._pre_auth_bytes + nbytes):
            self.pre_auth = False
            self._hold_pre_auth(0)
            return True
        limit = self.conf.unauthenticated_buffer_bytes
        if self.security is not None and not self.security.open_at_connect and held > UNAUTHENTICATED_FRAME_BYTES:
            self._close_bad(f"{held} bytes of a frame before authentication (at most "
                            f"{UNAUTHENTICATED_FRAME_BYTES})", "unauthenticatedBufferBytes")
            return False
        if limit and self.connections.unauthenticated_bytes - self._pre_auth_bytes + held > limit:
            self._close_bad(f"connections before authentication hold {self.connections.unauthenticated_bytes} "
                            f"bytes of incomplete frames, this one {held} more", "unauthenticatedBufferBytes")
            return False
        self._hold_pre_auth(held)
        return True

    def _hold_pre_auth(self, held: int) -> None:
        self.connections.unauthenticated_bytes += held - self._pre_auth_bytes
        self._pre_auth_bytes = held

    def _run_backlog(self) -> None:
        """Dispatch received requests until a limit blocks this connection; then stop reading it. The request
        stream takes the adds the hot path can store; the frames it hands back are decoded and dispatched here."""
        while not self._blocked():
            frame = self.requests.next_frame()
            if frame is None:  # none left, or the hot path's adds reached the in-progress limit
                self._pause_if_over(self.processor.adds)
                break
            if not self._dispatch_frame(frame):
                return
        if self.requests.held and self._room_wait is None and self.transport is not None:
            self._room_wait = asyncio.ensure_future(self._wait_for_room())
            self.tasks.add(self._room_wait)
            self._room_wait.add_done_callback(self.tasks.discard)
        self._update_reading()

    def _dispatch_frame(self, frame: bytes) -> bool:
        """Decode and dispatch one frame; False when it was malformed (the connection is then closed)."""
        try:
            request = codec.decode_request(frame)
        except codec.MalformedFrame as exc:
            self._close_bad(f"malformed frame: {exc}")
            return False
        self._dispatch(request)
        return True

    async def _wait_for_room(self) -> None:
        """Offer the held adds to storage again at each swap of the write caches, until none is left; one the
        general path must now decide (its ledger fenced meanwhile, the bookie read-only) is dispatched."""
        try:
            while self.requests.held:
                frame = self.requests.retry_held()
                if frame is not None:
                    if not self._dispatch_frame(frame):
                        return
                elif self.requests.held:
                    await self.processor.engine.wait_for_room(self.requests.held_wait)
        finally:
            self._room_wait = None
        self._run_backlog()  # the in-progress limit may have paused the frames behind

    def _blocked(self) -> bool:
        return self._paused or self._write_paused or self._upgrading or self.transport is None

    def _update_reading(self) -> None:
        if self.transport is None:
            return
        want_paused = self._blocked() or self.requests.has_frame
        if want_paused and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        elif not want_paused and self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()

    # --- write-side backpressure (asyncio flow control)
    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()
        wait_ms = self.conf.wait_timeout_on_response_backpressure_ms
        if wait_ms >= 0 and self._stall_timer is None:
            self._stall_timer = asyncio.get_running_loop().call_later(wait_ms / 1000, self._stalled)

    def resume_writing(self) -> None:
        self._write_paused = False
        self._cancel_stall_timer()
        self._release_slots(self._held_slots)
        self._held_slots = 0
        self._run_backlog()

    def _stalled(self) -> None:
        self._stall_timer = None
        if not self._write_paused:
            return
        if self.conf.close_channel_on_response_timeout:
            self._reset(f"nothing of its unsent responses drained for "
                        f"{self.conf.wait_timeout_on_response_backpressure_ms} ms")
        else:
            log.warning("connection from %s: unsent responses over budget for %d ms; still waiting",
                        self.peer, self.conf.wait_timeout_on_response_backpressure_ms)

    def _cancel_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _release_slots(self, n: int) -> None:
        for _ in range(n):
            self.processor.reads.leave()

    def _dispatch(self, request: m.Request) -> None:
        if type(request) is m.StartTLSRequest:
            if self._start_tls(request):
                return
        elif not self.authenticated:
            self._refuse_unauthenticated(request)
            return
        started = perf_counter()
        if type(request) is m.ReadRequest:
            response = self.processor.try_read(request)
            if response is not None:  # from memory, no task; the slot goes once the answer is written
                self.processor.record(request, response, started)
                self._send(codec.encode_response(request, response), 1)
                self._pause_if_over(self.processor.reads)
                return
        refusal = self.processor.admit(request)
        if refusal is not None:
            self._send(codec.encode_response(request, refusal))
            return
        counter = self.processor.counter_for(request)
        task = asyncio.ensure_future(self.processor.execute(request, hold_slot=True))
        self.tasks.add(task)
        task.add_done_callback(lambda t: self._respond(request, t, counter, started))
        self._pause_if_over(counter)

    def _hot_add_failed(self, version: int, protocol_version: int, txn_id: int, ledger_id: int,
                        entry_id: int, throttled: bool) -> None:
        """An add the hot path took failed in the journal (EIO), or it waited dbStorage_maxThrottleTimeMs for
        room in the write cache (ETOOMANYREQUESTS): answer it as the general path would."""
        status = StatusCode.ETOOMANYREQUESTS if throttled else StatusCode.EIO
        if throttled:
            self.processor.engine.count_throttled_add()
        request = m.AddRequest(m.Wire(version, txn_id, protocol_version), ledger_id, entry_id, b"", b"")
        self._send(codec.encode_response(request, m.error_response(request, status)))

    def _pause_if_over(self, counter: InFlight | None) -> None:
        if counter is not None and counter.must_pause() and not self._paused and self.transport:
            # maxAdds/ReadsInProgressLimit: stop reading this connection until a slot frees (no error).
            self._paused = True
            resume = asyncio.ensure_future(self._resume_when_below(counter))
            self.tasks.add(resume)
            resume.add_done_callback(self.tasks.discard)

    async def _resume_when_below(self, counter: InFlight) -> None:
        await counter.wait_below_limit()
        self._paused = False
        self._run_backlog()

    def _respond(self, request: m.Request, task: asyncio.Task[m.Response], counter: InFlight | None,
                 started: float) -> None:
        """Send a finished request's response. This connection owns the request's in-progress slot: a read's
        goes once its response is written (``_flush_outgoing``), any other's now."""
        self.tasks.discard(task)
        failed = task.cancelled() or task.exception() is not None
        if counter is not None and (failed or counter is not self.processor.reads
                                    or self.transport is None or self.transport.is_closing()):
            counter.leave(size_of(request))
            counter = None
        if failed:
            if not task.cancelled():
                log.error("request %r failed unexpectedly: %r", type(request).__name__, task.exception())
            return
        if self.transport is None or self.transport.is_closing():
            return
        self.processor.record(request, task.result(), started)
        self._send(codec.encode_response(request, task.result()), 0 if counter is None else 1)

    def _send(self, frame: bytes, slots: int = 0) -> None:
        # Responses completed in the same loop iteration (a journal group commit acks many adds at once)
        # leave in one write: one syscall per group instead of one per entry.
        self._outgoing.append(frame)
        self._outgoing_slots += slots
        if len(self._outgoing) == 1:
            asyncio.get_running_loop().call_soon(self._flush_outgoing)

    def _flush_outgoing(self) -> None:
        if self._upgrading:
            return  # the answers wait for the TLS transport (flushed once the handshake ends)
        data, self._outgoing = b"".join(self._outgoing), []
        slots, self._outgoing_slots = self._outgoing_slots, 0
        if self.transport is None or self.transport.is_closing():
            self._release_slots(slots)
            return
        self._last_activity = asyncio.get_running_loop().time()
        self.transport.write(data)  # may call pause_writing
        if self._write_paused:
            self._held_slots += slots  # written, not sent: the slots go when the connection drains
        else:
            self._release_slots(slots)

    # --- TLS and authorization
    def _start_tls(self, request: m.StartTLSRequest) -> bool:
        """Answer START_TLS and start the server-side handshake; False when this bookie has no TLS (the
        processor answers EBADREQ, as BookKeeper does)."""
        context = self.security.server_context() if self.security is not None else None
        transport = self.transport
        if context is None or transport is None:
            return False
        if self.secure or self._upgrading:  # TLS already started on this connection
            self._send(codec.encode_refusal(request, StatusCode.EBADREQ))
            return True
        if self.requests.has_frame or self.requests.buffered:
            self._close_bad("data sent after START_TLS before the TLS handshake")
            return True
        self._flush_outgoing()  # answers completed before START_TLS leave in plaintext, before its answer
        self.requests.flush()
        self.requests.holding_output = True  # the hot path's later answers wait for the TLS transport
        transport.write(codec.encode_response(request, m.StartTLSResponse(request.wire, StatusCode.EOK)))
        # Nothing may read the socket until start_tls owns it: the next bytes are the client's ClientHello.
        transport.pause_reading()
        self._reading_paused = True
        self._upgrading = True
        task = asyncio.ensure_future(self._upgrade(transport, context, request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def _upgrade(self, transport: asyncio.Transport, context: ssl.SSLContext,
                       request: m.StartTLSRequest) -> None:
        assert self.security is not None
        try:
            secure = await asyncio.get_running_loop().start_tls(
                transport, self, context, server_side=True, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
        except (OSError, TimeoutError, ConnectionError) as exc:  # ssl.SSLError is an OSError
            self.security.refusals.refuse("TLS handshake", self.peer, self.client_host, _handshake_failure(exc))
            transport.abort()
            self.connection_lost(None)
            return
        except Exception:  # a defect must still close this connection only, not leave it half upgraded
            log.exception("TLS upgrade of the connection from %s failed", self.peer)
            transport.abort()
            self.connection_lost(None)
            return
        if secure is None or self.transport is None:
            return  # closed during the handshake
        self.transport = secure
        self.requests.write = secure.write
        self.secure = True
        budget = self.conf.max_unsent_response_bytes_per_connection
        secure.set_write_buffer_limits(high=budget, low=budget // 2)
        refusal = self.security.on_protocol_upgrade(secure.get_extra_info("peercert"))
        if refusal is None:
            self.authenticated = self.requests.takes_adds = True
        else:
            self._refusal = refusal
            self.security.refusals.refuse("unauthorized", self.peer, self.client_host,
                                          refusal + "; its requests get EUA")
            # BookKeeper answers the START_TLS again, header and EIO, inside TLS when the auth plugin refuses.
            self._send(codec.encode_refusal(request, StatusCode.EIO))
        self._upgrading = False
        self._reading_paused = False  # the TLS transport reads
        self._flush_outgoing()
        self.requests.holding_output = False
        self.requests.flush()
        self._run_backlog()

    def _refuse_unauthenticated(self, request: m.Request) -> None:
        """BookKeeper's AuthHandler before authentication: EUA to v3 requests and v2 adds and reads; any other
        v2 request closes the connection."""
        if not self._refusal:
            self._refusal = ("request before START_TLS (TLS is required)" if not self.secure
                             else "not authorized")
            assert self.security is not None
            self.security.refusals.refuse("unauthenticated request", self.peer, self.client_host,
                                          f"{type(request).__name__}: {self._refusal}; answering EUA")
        if request.wire.version == 3 or isinstance(request, (m.AddRequest, m.ReadRequest)):
            self._send(codec.encode_refusal(request, StatusCode.EUA))
        elif self.transport is not None:
            self.transport.abort()

    def _close_bad(self, reason: str, limit: str = "badFrames") -> None:
        # Counted and logged once per interval: a flood of bad connections must not flood the log.
        self.processor.limits.hit(limit, f"closing connection from {self.peer}: {reason}")
        self._hold_pre_auth(0)
        if self.transport is not None:
            self.transport.abort()

    def _reset(self, reason: str) -> None:
        """Close with a reset: a FIN would wait behind the unsent bytes for a peer that reads nothing, and the
        kernel would keep them for minutes."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        self._close_bad(reason, "waitTimeoutOnResponseBackpressureMs")

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.transport is not None:
            self.transport.close()


_HANDSHAKE_REASONS = {
    "CERTIFICATE_VERIFY_FAILED": "its certificate does not verify against tlsTrustStore (another CA, expired?)",
    "PEER_DID_NOT_RETURN_A_CERTIFICATE": "it sent no client certificate (tlsClientAuthentication requires one)",
}


def _handshake_failure(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or str(exc)
        return f"TLS handshake failed: {_HANDSHAKE_REASONS.get(reason, reason)} ({reason})"
    if isinstance(exc, TimeoutError):
        return f"no TLS handshake within {HANDSHAKE_TIMEOUT_S:g} s of START_TLS"
    return f"connection lost during the TLS handshake: {exc!r}"
