"""Waiting with a time limit without losing a cancellation.

On Python 3.11, ``asyncio.wait_for`` returns the awaited result when the waiting task is cancelled in the same
loop iteration that result arrives: the cancellation is lost, so a loop that is stopped by cancelling it runs
on, and whoever awaits it after the cancel (a ``stop()``) waits for ever. ``asyncio.timeout`` counts
cancellations and has no such window, so the bookie, its client and its tools wait with it (ruff bans
``asyncio.wait_for`` outside the tests).
"""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Until ``event`` is set (True) or ``seconds`` have passed (False)."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
