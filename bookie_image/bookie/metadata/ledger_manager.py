"""Ledger metadata (BookKeeper's ``HierarchicalLedgerManager``): create, read, conditional write, delete,
and the ledger ranges the GC and the auditor walk. A new ledger's id comes from ``LedgerIdGenerator``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable

from bookie.metadata import layout as lay
from bookie.metadata.ledger_ids import LedgerIdGenerator
from bookie.metadata.ledger_metadata import LedgerMetadata, parse_ledger_metadata, serialize_ledger_metadata
from bookie.metadata.session import LedgerRange, MetadataError, NodeExists, NoNode, NoSuchLedger, Versioned

log = logging.getLogger(__name__)


class LedgerManager(LedgerIdGenerator):
    """Ledger metadata znodes over one ZooKeeper session."""

    # ------------------------------------------------------------ ledger metadata

    async def create_ledger_metadata(self, ledger_id: int, metadata: LedgerMetadata) -> int:
        """Create the ledger's znode (NodeExists if the id is taken); returns its version (0)."""
        await self._create(self.layout.ledger(ledger_id), serialize_ledger_metadata(metadata), makepath=True)
        return 0

    async def create_ledger(self, metadata: LedgerMetadata) -> Versioned[int]:
        """Allocate a fresh ledger id and store its metadata; returns (ledger id, znode version)."""
        while True:
            ledger_id = await self.generate_ledger_id()
            try:
                return Versioned(ledger_id, await self.create_ledger_metadata(ledger_id, metadata))
            except NodeExists:
                log.warning("ledger id %d already taken, generating another", ledger_id)

    async def read_ledger_metadata(self, ledger_id: int) -> Versioned[LedgerMetadata]:
        try:
            data, stat = await self._get(self.layout.ledger(ledger_id))
        except NoNode as exc:
            raise NoSuchLedger(f"ledger {ledger_id} has no metadata") from exc
        return Versioned(parse_ledger_metadata(data), stat.version)

    async def write_ledger_metadata(self, ledger_id: int, metadata: LedgerMetadata, version: int) -> int:
        """Conditional update (BadVersion on conflict, NoSuchLedger if deleted); returns the new version."""
        try:
            stat = await self._call("set", self.layout.ledger(ledger_id), serialize_ledger_metadata(metadata),
                                    version=version)
        except NoNode as exc:
            raise NoSuchLedger(f"ledger {ledger_id} has no metadata") from exc
        return int(stat.version)

    async def delete_ledger_metadata(self, ledger_id: int, version: int = -1) -> None:
        try:
            await self._delete(self.layout.ledger(ledger_id), version)
        except NoNode as exc:
            raise NoSuchLedger(f"ledger {ledger_id} has no metadata") from exc

    async def ledger_exists(self, ledger_id: int) -> bool:
        return await self._call("exists", self.layout.ledger(ledger_id)) is not None

    # ------------------------------------------------------------ ledger ranges (GC)

    async def ledger_ranges(self) -> AsyncIterator[LedgerRange]:
        """Existing ledgers, range by range, exactly like ``HierarchicalLedgerManager.getLedgerRanges``.

        Legacy (2-4-4) ranges first, then long (3-4-4-4-4) ranges; nodes in lexicographic order; empty
        ranges skipped. Any ZooKeeper error raises ``MetadataError``: GC deletes data based on this.
        """
        async for r in self._legacy_ranges():
            yield r
        async for r in self._long_ranges(self.layout.root, 0):
            yield r

    async def all_ledger_ids(self) -> list[int]:
        return [i async for r in self.ledger_ranges() for i in r.ledger_ids]

    async def _legacy_ranges(self) -> AsyncIterator[LedgerRange]:
        root = self.layout.root
        for l1 in sorted(await self._children(root)):  # a missing root is an error, never "no ledgers"
            if not lay.LEGACY_PARENT_RE.fullmatch(l1):
                continue
            for l2 in sorted(await self._children(f"{root}/{l1}")):
                path = f"{root}/{l1}/{l2}"
                try:
                    low = lay.parse_java_long(l1 + l2 + "0000")
                    high = lay.parse_java_long(l1 + l2 + "9999")
                except ValueError as exc:
                    raise MetadataError(f"unexpected znode {path}: {exc}") from exc
                ids = self._ledger_ids(path, await self._children_or_empty(path))
                selected = tuple(i for i in ids if low <= i <= high)
                if selected:
                    yield LedgerRange(selected)

    async def _long_ranges(self, path: str, level: int) -> AsyncIterator[LedgerRange]:
        for node in sorted(await self._children_or_empty(path)):
            if level == 0 and not lay.LONG_PARENT_RE.fullmatch(node):
                continue
            child = f"{path}/{node}"
            if level < 3:
                async for r in self._long_ranges(child, level + 1):
                    yield r
                continue
            ids = self._ledger_ids(child, await self._children_or_empty(child))
            if ids:
                yield LedgerRange(tuple(ids))

    def _ledger_ids(self, parent: str, names: Iterable[str]) -> list[int]:
        """``ledgerListToSet``: skip special names and names that do not parse (logged)."""
        ids = set()
        for name in names:
            if lay.is_special_znode(name):
                continue
            try:
                ids.add(self.layout.ledger_id(f"{parent}/{name}"))
            except ValueError:
                log.warning("ignoring znode %s/%s: not a ledger", parent, name)
        return sorted(ids)
