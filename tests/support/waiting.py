"""Waiting, bounded, for something a real component does in the background (a ZooKeeper registration, a state
change) instead of asserting it the instant the triggering call returns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def eventually(predicate: Callable[[], Awaitable[bool]], what: str, within: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await predicate():
        if loop.time() >= deadline:
            raise AssertionError(f"not reached within {within:.0f}s: {what}")
        await asyncio.sleep(0.1)
