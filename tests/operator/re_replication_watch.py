"""What a story of planned restarts did to BookKeeper's re-replication, sampled from ZooKeeper while it runs:
every ledger ever seen marked under-replicated, and what the ``underreplication/disable`` znode held (None:
replication enabled). A mark of a lost bookie stays until autorecovery has copied the ledger, which changes
its metadata (``ledger_identities`` checks that), so a sample every half second does not miss one."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from bookie.metadata.store import MetadataError, MetadataStore

INTERVAL_S = 0.5


class ReplicationWatch:
    def __init__(self, zk: str, root: str) -> None:
        self.store = MetadataStore(zk, root)
        self.marked: set[int] = set()
        self.disabled_by: set[bytes | None] = set()
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ReplicationWatch:
        await self.store.connect()
        await self.sample()
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.sample()
        await self.store.close()

    async def sample(self) -> None:
        self.marked.update(await self.store.list_underreplicated())
        self.disabled_by.add(await self.store.replication_disabled_by())
        self.samples += 1

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(MetadataError):   # a lost sample, not a failed story
                await self.sample()
            await asyncio.sleep(INTERVAL_S)

    async def now_disabled_by(self) -> bytes | None:
        return await self.store.replication_disabled_by()
