"""Rate limiters for GC: a blocking one for the GC thread (compaction reads and writes, metadata scans) and
an async one for ZooKeeper operations (``gcMetadataOpRateLimit``)."""

from __future__ import annotations

import asyncio
import threading
import time


class Throttle:
    """Token bucket in units per second (entries or bytes); ``rate <= 0`` means unlimited.

    Blocking: ``acquire`` sleeps in the calling thread. The bucket starts empty and holds at most a tenth of
    a second of tokens, so the achieved rate is the configured one from the first second on and a pause is
    never followed by a burst. ``stop`` wakes sleepers at once.
    """

    def __init__(self, rate: float, stop: threading.Event | None = None) -> None:
        self.rate = rate
        self._tokens = 0.0
        self._last = time.monotonic()
        self._stop = stop or threading.Event()
        self.waited_s = 0.0
        self.acquired = 0.0

    def acquire(self, amount: float) -> None:
        self.acquired += amount
        if self.rate <= 0:
            return
        now = time.monotonic()
        self._tokens = min(self.rate / 10, self._tokens + (now - self._last) * self.rate)
        self._last = now
        self._tokens -= amount
        if self._tokens < 0:
            delay = -self._tokens / self.rate
            self.waited_s += delay
            self._stop.wait(delay)


class AsyncRateLimiter:
    """Operations per second for the event loop (ZooKeeper reads and locks during GC)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.rate <= 0:
            return
        async with self._lock:
            loop = asyncio.get_running_loop()
            now = loop.time()
            wait = self._next - now
            self._next = max(now, self._next) + 1.0 / self.rate
        if wait > 0:
            await asyncio.sleep(wait)
