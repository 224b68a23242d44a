"""Helpers of the stream tests: small policies, a fake clock, the stream as a reader sees it."""

from __future__ import annotations

from bookie.streams import Policies, Record
from bookie.streams.cleaner import Cleaner

# Small ledgers so a few records already make several segments; no daily window in the way by default.
SMALL = Policies(roll_bytes=400, ensemble=3, write_quorum=2, ack_quorum=2, delete_pause_ms=0)


class Clock:
    """A fake wall clock in milliseconds (record timestamps, segment ages): tests move it, never sleep."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def visible(records: list[Record]) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """Records as comparable tuples."""
    return [(r.position, r.key, r.value, r.timestamp) for r in records]


async def clean_fully(cleaner: Cleaner, namespace: str, name: str, now_ms: int) -> int:
    """Cleaning passes until the checkpoint reaches the end of the closed segments; returns the pass count."""
    passes = 0
    while True:
        md = await cleaner.store.get(namespace, name)
        closed = md.value.closed_segments
        if not closed or (closed[-1].last is not None and md.value.cleaned_to > closed[-1].last):
            return passes
        result = await cleaner.clean(namespace, name, now_ms=now_ms)
        assert result.swapped, result
        passes += 1
