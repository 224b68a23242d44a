"""The bookie's TCP listener: one asyncio protocol per connection.

It splits the byte stream into frames, decodes each frame (v2 or v3, detected per frame), hands the
request to the processor and writes the encoded response when it completes. Responses may leave out of
order, as in BookKeeper (v3 matches by txnId, v2 by ledger/entry/op). A malformed or oversized frame closes
that connection only.
"""

from __future__ import annotations

import asyncio
import logging
from time import perf_counter
from typing import Any

from bookie.processor import InFlight, RequestProcessor
from bookie.protocol import codec
from bookie.protocol import messages as m
from bookie.protocol.framing import FrameReader, FrameTooLarge

log = logging.getLogger(__name__)


class BookieConnection(asyncio.Protocol):
    def __init__(self, processor: RequestProcessor, max_frame_size: int,
                 connections: set[BookieConnection]) -> None:
        self.processor = processor
        self.frames = FrameReader(max_frame_size)
        self.connections = connections
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.tasks: set[asyncio.Task[Any]] = set()
        self._paused = False
        self._outgoing: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCP transport is not a subclass of asyncio.Transport but has its methods.
        self.transport = transport  # type: ignore[assignment]
        self.peer = str(transport.get_extra_info("peername"))
        self.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.discard(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.frames.feed(data)
        except FrameTooLarge as exc:
            self._close_bad(f"frame too large: {exc}")
            return
        for frame in frames:
            try:
                request = codec.decode_request(frame)
            except codec.MalformedFrame as exc:
                self._close_bad(f"malformed frame: {exc}")
                return
            self._dispatch(request)

    def _dispatch(self, request: m.Request) -> None:
        started = perf_counter()
        if type(request) is m.AddRequest:
            outcome = self.processor.try_add(request,
                                             lambda response: self._add_durable(request, response, started))
            if outcome is True:  # no task: answered from the journal's completion of its group
                self._pause_if_over(self.processor.adds)
                return
            if outcome is not False:
                self.processor.record(request, outcome, started)
                self._send(codec.encode_response(request, outcome))
                return
        task = asyncio.ensure_future(self.processor.process(request))
        self.tasks.add(task)
        task.add_done_callback(lambda t: self._respond(request, t, started))
        self._pause_if_over(self.processor.counter_for(request))

    def _add_durable(self, request: m.AddRequest, failure: m.Response | None, started: float) -> None:
        self.processor.record_add(request, failure is None, started)
        if self.transport is None or self.transport.is_closing():
            return
        self._send(codec.encode_add_ok(request) if failure is None else codec.encode_response(request, failure))

    def _pause_if_over(self, counter: InFlight | None) -> None:
        if counter is not None and counter.must_pause() and not self._paused and self.transport:
            # maxAdds/ReadsInProgressLimit: stop reading this connection until a slot frees (no error).
            self._paused = True
            self.transport.pause_reading()
            resume = asyncio.ensure_future(self._resume_when_below(counter))
            self.tasks.add(resume)
            resume.add_done_callback(self.tasks.discard)

    async def _resume_when_below(self, counter: InFlight) -> None:
        await counter.wait_below_limit()
        self._paused = False
        if self.transport is not None:
            self.transport.resume_reading()

    def _respond(self, request: m.Request, task: asyncio.Task[m.Response], started: float) -> None:
        self.tasks.discard(task)
        if task.cancelled() or self.transport is None or self.transport.is_closing():
            return
        exc = task.exception()
        if exc is not None:
            log.error("request %r failed unexpectedly: %r", type(request).__name__, exc)
            return
        self.processor.record(request, task.result(), started)
        self._send(codec.encode_response(request, task.result()))

    def _send(self, frame: bytes) -> None:
        # Responses completed in the same loop iteration (a journal group commit acks many adds at once)
        # leave in one write: one syscall per group instead of one per entry.
        self._outgoing.append(frame)
        if len(self._outgoing) == 1:
            asyncio.get_running_loop().call_soon(self._flush_outgoing)

    def _flush_outgoing(self) -> None:
        data, self._outgoing = b"".join(self._outgoing), []
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _close_bad(self, reason: str) -> None:
        log.warning("closing connection from %s: %s", self.peer, reason)
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.transport is not None:
            self.transport.close()
