"""Ledger id generation (BookKeeper's ``LongZkLedgerIdGenerator`` for the hierarchical layout)."""

from __future__ import annotations

from bookie.metadata import layout as lay
from bookie.metadata.session import ZkSession


class LedgerIdGenerator(ZkSession):
    """Fresh ledger ids from ZooKeeper sequence nodes over one ZooKeeper session."""


    async def generate_ledger_id(self) -> int:
        """BookKeeper's id generation for the hierarchical layout (``LongZkLedgerIdGenerator``).

        Short ids: sequence number of an ephemeral-sequential ``<root>/idgen/ID-`` node (deleted right
        after). Once ``<root>/idgen-long`` exists (31-bit ids exhausted), ids are
        ``HOB << 32 | sequence`` of ``<root>/idgen-long/HOB-%010d/ID-``.
        """
        if await self._call("exists", self.layout.idgen_long) is not None:
            return await self._generate_long_id()
        ledger_id = await self._sequence_id(f"{self.layout.idgen}/{lay.ID_GEN_PREFIX}")
        if 0 <= ledger_id < lay.INT_MAX:
            return ledger_id
        await self._ensure(self.layout.idgen_long)
        return await self._generate_long_id()

    async def _sequence_id(self, prefix: str) -> int:
        created = await self._create(prefix, ephemeral=True, sequence=True, makepath=True)
        await self._delete(created, missing_ok=True)
        return lay.parse_java_long(created[len(prefix):])

    async def _generate_long_id(self) -> int:
        base = self.layout.idgen_long
        while True:
            hobs = [lay.parse_java_long(c[len(lay.HOB_PREFIX):]) for c in await self._children(base)
                    if c.startswith(lay.HOB_PREFIX) and c[len(lay.HOB_PREFIX):].isdigit()]
            high = max(hobs) if hobs else 0
            if high == 0:
                await self._ensure(f"{base}/{lay.HOB_PREFIX}{1:010d}")
                continue
            low = await self._sequence_id(f"{base}/{lay.HOB_PREFIX}{high:010d}/{lay.ID_GEN_PREFIX}")
            if 0 <= low < lay.INT_MAX:
                return (high << 32) | low
            await self._ensure(f"{base}/{lay.HOB_PREFIX}{high + 1:010d}")
