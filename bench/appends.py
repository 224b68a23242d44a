"""Appends kept in flight on one ledger, as an application that pipelines them does: the Python client's
benchmarks (bench/client_cpu.py, bench/run_all.py).

A counter and an event woken only when a sender waits: asyncio.Semaphore cost the benchmark about a tenth of the
client's CPU per append (its ``locked()`` builds a generator on every acquire), which measured the harness more
than the client.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any


class AppendWindow:
    """At most ``size`` appends in flight; each acknowledged one's latency (append to acknowledgement, s)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.in_flight = 0
        self.latencies: list[float] = []
        self.failed = 0
        self._room = asyncio.Event()
        self._waiting = False
        self._pending: set[asyncio.Future[int]] = set()

    async def append(self, ledger: Any, payload: bytes) -> None:
        """Send one append once fewer than ``size`` are in flight."""
        while self.in_flight >= self.size:
            self._room.clear()
            self._waiting = True
            await self._room.wait()
        self.in_flight += 1
        future = ledger.append(payload)
        self._pending.add(future)
        future.add_done_callback(functools.partial(self._done, time.perf_counter()))

    def _done(self, sent_at: float, future: asyncio.Future[int]) -> None:
        self.in_flight -= 1
        self._pending.discard(future)
        if future.cancelled() or future.exception() is not None:
            self.failed += 1
        else:
            self.latencies.append(time.perf_counter() - sent_at)
        if self._waiting:
            self._waiting = False
            self._room.set()

    async def drain(self) -> None:
        """Wait for every append in flight."""
        if self._pending:
            await asyncio.wait(set(self._pending))
