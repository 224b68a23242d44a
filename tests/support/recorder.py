"""The real ledger client's operations, recorded into a ``History`` (tests/support/history.py) for the checker.

Each call records the operation with its invoke and complete moments and its outcome, and returns what the
client returned (None when it failed: scenarios under faults expect failures, the checker judges them). A
read that every replica answered with "no such entry" is recorded as ``missing``; any other failure (a
timeout, a cut connection) as an unknown outcome.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bookie.client import BookKeeper, ClientConfig, LedgerHandle
from bookie.client import errors as e

from tests.support.history import History, Op


@dataclass
class Recorder:
    history: History
    process: str

    async def append(self, handle: LedgerHandle, data: bytes) -> int | None:
        """``handle.append``: its entry id is known once pushed, whether or not it is acknowledged."""
        start = self.history.clock()
        pushed = handle.last_add_pushed
        future = handle.append(data)
        entry = handle.last_add_pushed if handle.last_add_pushed > pushed else None  # refused before a push
        try:
            acked = await future
        except (e.BKError, OSError, TimeoutError) as exc:
            self._add("append", handle.ledger_id, start, False, entry=entry, data=data, error=repr(exc))
            return None
        self._add("append", handle.ledger_id, start, True, entry=acked, data=data)
        return acked

    async def read(self, handle: LedgerHandle, entry: int, *, unconfirmed: bool = False) -> bytes | None:
        kind = "read-unconfirmed" if unconfirmed else "read"
        start = self.history.clock()
        try:
            [got] = await handle.read_unconfirmed(entry, entry)
        except e.NoSuchEntry as exc:
            self._add(kind, handle.ledger_id, start, False, entry=entry, missing=True, error=repr(exc))
            return None
        except (e.BKError, OSError, TimeoutError) as exc:
            self._add(kind, handle.ledger_id, start, False, entry=entry, error=repr(exc))
            return None
        self._add(kind, handle.ledger_id, start, True, entry=entry, data=got.payload)
        return got.payload

    async def recover(self, bk: BookKeeper, ledger_id: int, password: bytes = b"") -> LedgerHandle | None:
        """Open with recovery (fence, then close at the last entry recovered), as a new reader does."""
        start = self.history.clock()
        try:
            handle = await bk.open_ledger(ledger_id, password, recovery=True)
        except (e.BKError, OSError, TimeoutError) as exc:
            self._add("recover", ledger_id, start, False, error=repr(exc))
            return None
        md = handle.metadata
        self._add("recover", ledger_id, start, True, last=md.last_entry_id, length=md.length)
        return handle

    async def close(self, handle: LedgerHandle) -> bool:
        start = self.history.clock()
        try:
            await handle.close()
        except (e.BKError, OSError, TimeoutError) as exc:
            self._add("close", handle.ledger_id, start, False, error=repr(exc))
            return False
        md = handle.metadata
        self._add("close", handle.ledger_id, start, True, last=md.last_entry_id, length=md.length)
        return True

    async def lac(self, handle: LedgerHandle) -> int | None:
        start = self.history.clock()
        try:
            value = await handle.read_last_add_confirmed()
        except (e.BKError, OSError, TimeoutError) as exc:
            self._add("lac", handle.ledger_id, start, False, error=repr(exc))
            return None
        self._add("lac", handle.ledger_id, start, True, last=value)
        return value

    async def read_back(self, handle: LedgerHandle, *, concurrency: int = 1) -> None:
        """Every entry of a closed or recovered ledger, one read each, ``concurrency`` of them at a time."""
        last = handle.metadata.last_entry_id
        for first in range(0, last + 1, concurrency):
            batch = range(first, min(first + concurrency, last + 1))
            await asyncio.gather(*(self.read(handle, entry) for entry in batch))

    def _add(self, kind: str, ledger: int, start: int, ok: bool, **fields: object) -> None:
        self.history.add(Op(kind, self.process, ledger, start, self.history.clock(), ok, **fields))  # type: ignore[arg-type]


async def recover_and_read_every_ledger(config: ClientConfig, history: History, concurrency: int = 1) -> None:
    """The end of every scenario: a new client recovers each ledger of ``history`` and reads every entry back,
    recorded as ``final-reader`` for the checker."""
    async with BookKeeper(config) as bk:
        reader = Recorder(history, "final-reader")
        for ledger in sorted(history.ledgers()):
            handle = await reader.recover(bk, ledger)
            assert handle is not None, f"ledger {ledger} could not be opened at the end"
            await reader.read_back(handle, concurrency=concurrency)
