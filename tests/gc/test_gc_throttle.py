"""Compaction and metadata throttles achieve their configured rate, from the first second, without bursts."""

from __future__ import annotations

import threading
import time

from bookie.gc.throttle import AsyncRateLimiter, Throttle


def test_throttle_by_entries_and_bytes_keeps_the_rate() -> None:
    for rate, unit, count in ((2000, 1, 500), (4_000_000, 8192, 122)):  # 0.25 s of work each
        throttle = Throttle(rate)
        started = time.monotonic()
        for _ in range(count):
            throttle.acquire(unit)
        elapsed = time.monotonic() - started
        assert 0.2 <= elapsed <= 0.4, (rate, elapsed)


def test_unlimited_and_stop_do_not_wait() -> None:
    started = time.monotonic()
    unlimited = Throttle(0)
    for _ in range(10000):
        unlimited.acquire(1)
    stop = threading.Event()
    stop.set()
    Throttle(1, stop).acquire(100)  # would be 100 s
    assert time.monotonic() - started < 0.5


async def test_metadata_op_rate_limit() -> None:
    limiter = AsyncRateLimiter(200)
    started = time.monotonic()
    for _ in range(50):
        await limiter.acquire()
    assert 0.2 <= time.monotonic() - started <= 0.4
