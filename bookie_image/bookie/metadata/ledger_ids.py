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

    async def issued_high_water(self) -> int:
        """The highest ledger id the generator may have issued so far, or -1 when it has issued none (or ids were
        chosen without it). ZooKeeper numbers a sequential child by its parent's ``cversion``, which counts every
        child created or deleted, so no id issued yet exceeds the parent's ``cversion`` minus one: the short ids'
        ``<root>/idgen``, or the highest ``HOB-`` node's under ``<root>/idgen-long``."""
        if await self._call("exists", self.layout.idgen_long) is not None:
            hobs = [lay.parse_java_long(c[len(lay.HOB_PREFIX):]) for c in await self._children(self.layout.idgen_long)
                    if c.startswith(lay.HOB_PREFIX) and c[len(lay.HOB_PREFIX):].isdigit()]
            if hobs:
                stat = await self._call("exists", f"{self.layout.idgen_long}/{lay.HOB_PREFIX}{max(hobs):010d}")
                if stat is not None:
                    return (max(hobs) << 32) | max(0, stat.cversion - 1)
        stat = await self._call("exists", self.layout.idgen)
        return stat.cversion - 1 if stat is not None and stat.cversion > 0 else -1
