"""A small blocking wrapper: the async client on an event loop in a background thread.

    with SyncBookKeeper(ClientConfig(zk_servers="127.0.0.1:2181")) as bk:
        lh = bk.create_ledger(3, 3, 2)
        lh.add(b"hello")
        lh.close()
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from types import TracebackType
from typing import Any, TypeVar

import uvloop

from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.client.ledger import LedgerEntry, LedgerHandle
from bookie.protocol.entry import DigestType

T = TypeVar("T")


class _Loop:
    def __init__(self) -> None:
        self.loop = uvloop.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bookie-client", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class SyncLedger:
    def __init__(self, loop: _Loop, handle: LedgerHandle) -> None:
        self._loop = loop
        self.handle = handle

    @property
    def ledger_id(self) -> int:
        return self.handle.ledger_id

    @property
    def last_add_confirmed(self) -> int:
        return self.handle.last_add_confirmed

    def add(self, data: bytes) -> int:
        return self._loop.run(self.handle.add(data))

    def read(self, first: int, last: int | None = None) -> list[LedgerEntry]:
        return self._loop.run(self.handle.read(first, last))

    def read_last_add_confirmed(self) -> int:
        return self._loop.run(self.handle.read_last_add_confirmed())

    def close(self) -> None:
        self._loop.run(self.handle.close())


class SyncBookKeeper:
    def __init__(self, config: ClientConfig) -> None:
        self._loop = _Loop()
        self._bk = BookKeeper(config)
        try:
            self._loop.run(self._start())
        except BaseException:
            self._loop.stop()
            raise

    async def _start(self) -> None:
        await self._bk.start()

    def create_ledger(self, ensemble_size: int = 3, write_quorum: int | None = None,
                      ack_quorum: int | None = None, *, digest_type: DigestType = DigestType.CRC32C,
                      password: bytes = b"", custom_metadata: Mapping[str, bytes] | None = None) -> SyncLedger:
        return SyncLedger(self._loop, self._loop.run(self._bk.create_ledger(
            ensemble_size, write_quorum, ack_quorum, digest_type=digest_type, password=password,
            custom_metadata=custom_metadata)))

    def open_ledger(self, ledger_id: int, password: bytes = b"", *, recovery: bool = True) -> SyncLedger:
        return SyncLedger(self._loop, self._loop.run(self._bk.open_ledger(ledger_id, password,
                                                                           recovery=recovery)))

    def delete_ledger(self, ledger_id: int) -> None:
        self._loop.run(self._bk.delete_ledger(ledger_id))

    def list_ledgers(self) -> list[int]:
        return self._loop.run(self._bk.list_ledgers())

    def close(self) -> None:
        try:
            self._loop.run(self._bk.close())
        finally:
            self._loop.stop()

    def __enter__(self) -> SyncBookKeeper:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
