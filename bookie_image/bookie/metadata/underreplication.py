"""Under-replication marks, replication locks and switches, and the auditor election (BookKeeper's
``LedgerUnderreplicationManager`` and ``AuditorElector`` znodes), used by autorecovery."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any

from google.protobuf import text_format

from bookie.metadata import layout as lay
from bookie.metadata.session import BadVersion, NodeExists, NoNode, NotEmpty, UnderreplicatedLedger, ZkSession
from bookie.protocol.proto import DataFormats_pb2 as _df

df: Any = _df


class UnderreplicationManager(ZkSession):
    """Autorecovery's znodes over one ZooKeeper session."""

    # ------------------------------------------------------------ underreplication (autorecovery)

    async def mark_ledger_underreplicated(self, ledger_id: int, missing_replicas: Iterable[str],
                                          *, store_ctime: bool = True) -> None:
        """Create or extend ``underreplication/ledgers/.../urL%010d`` (text-format data)."""
        path = self.layout.ur_ledger(ledger_id)
        missing = list(dict.fromkeys(missing_replicas))
        while True:
            fmt = df.UnderreplicatedLedgerFormat(replica=missing)
            if store_ctime:
                fmt.ctime = int(time.time() * 1000)
            try:
                await self._create(path, text_format.MessageToString(fmt).encode(), makepath=True)
                return
            except NodeExists:
                pass
            if await self._merge_replicas(path, missing, store_ctime):
                return

    async def _merge_replicas(self, path: str, missing: list[str], store_ctime: bool) -> bool:
        """Add replicas to an existing mark; False if it vanished meanwhile (caller re-creates)."""
        while True:
            try:
                data, stat = await self._get(path)
            except NoNode:
                return False
            fmt = text_format.Parse(data.decode(), df.UnderreplicatedLedgerFormat())
            added = [r for r in missing if r not in fmt.replica]
            if not added:
                return True
            fmt.replica.extend(added)
            if store_ctime:
                fmt.ctime = int(time.time() * 1000)
            try:
                await self._call("set", path, text_format.MessageToString(fmt).encode(), version=stat.version)
                return True
            except NoNode:
                return False
            except BadVersion:
                continue

    async def get_underreplicated(self, ledger_id: int) -> UnderreplicatedLedger | None:
        try:
            data, _ = await self._get(self.layout.ur_ledger(ledger_id))
        except NoNode:
            return None
        fmt = text_format.Parse(data.decode(), df.UnderreplicatedLedgerFormat())
        ctime = fmt.ctime if fmt.HasField("ctime") else None
        return UnderreplicatedLedger(ledger_id, tuple(fmt.replica), ctime)

    async def mark_ledger_replicated(self, ledger_id: int) -> None:
        """Remove the mark and the hex hierarchy above it when empty."""
        path = self.layout.ur_ledger(ledger_id)
        await self._delete(path, missing_ok=True)
        parent = path.rsplit("/", 1)[0]
        for _ in range(4):
            try:
                await self._delete(parent, missing_ok=True)
            except NotEmpty:
                return
            parent = parent.rsplit("/", 1)[0]

    async def list_underreplicated(self) -> list[int]:
        """Ledger ids currently marked underreplicated, ascending."""
        found: list[int] = []
        await self._walk_ur(self.layout.ur_ledgers, 0, found)
        return sorted(found)

    async def _walk_ur(self, path: str, level: int, found: list[int]) -> None:
        for name in await self._children_or_empty(path):
            if level < 4:
                await self._walk_ur(f"{path}/{name}", level + 1, found)
            elif name.startswith("urL"):
                with contextlib.suppress(ValueError):
                    found.append(lay.ZkLayout.ur_ledger_id(name))

    async def acquire_underreplicated_lock(self, ledger_id: int, owner: str) -> bool:
        """Ephemeral ``locks/urL%010d``; False if another replication worker holds it."""
        data = text_format.MessageToString(df.LockDataFormat(bookieId=owner)).encode()
        try:
            await self._create(self.layout.ur_lock(ledger_id), data, ephemeral=True, makepath=True)
        except NodeExists:
            return False
        return True

    async def release_underreplicated_lock(self, ledger_id: int) -> None:
        await self._delete(self.layout.ur_lock(ledger_id), missing_ok=True)

    async def is_replication_enabled(self) -> bool:
        return await self._call("exists", self.layout.ur_disable) is None

    async def set_replication_enabled(self, enabled: bool) -> None:
        if enabled:
            await self._delete(self.layout.ur_disable, missing_ok=True)
        else:
            await self._ensure(self.layout.ur_disable)

    async def replication_disabled_by(self) -> bytes | None:
        """What the ``disable`` znode holds (BookKeeper's own tools write it empty), or None: replication is
        enabled. Whoever disables it may say who they are in the data; BookKeeper reads only its existence."""
        try:
            data, _ = await self._get(self.layout.ur_disable)
        except NoNode:
            return None
        return data

    async def disable_replication_as(self, owner: bytes) -> bool:
        """Create ``disable`` holding ``owner``; False if replication was already disabled (by anyone)."""
        try:
            await self._create(self.layout.ur_disable, owner, makepath=True)
        except NodeExists:
            return False
        return True

    async def enable_replication_of(self, owner: bytes) -> bool:
        """Delete ``disable`` only if it still holds ``owner``: somebody else's disable is never lifted. True if
        replication is enabled now by this call."""
        try:
            data, stat = await self._get(self.layout.ur_disable)
        except NoNode:
            return False
        if data != owner:
            return False
        try:
            await self._delete(self.layout.ur_disable, stat.version)
        except (NoNode, BadVersion):
            return False
        return True

    async def lost_bookie_recovery_delay(self) -> int | None:
        try:
            data, _ = await self._get(self.layout.ur_lost_bookie_recovery_delay)
        except NoNode:
            return None
        return int(data.decode())

    async def set_lost_bookie_recovery_delay(self, seconds: int) -> None:
        path = self.layout.ur_lost_bookie_recovery_delay
        if not await self._ensure(path, str(seconds).encode()):
            await self._call("set", path, str(seconds).encode())

    # ------------------------------------------------------------ auditor election

    async def submit_auditor_vote(self, bookie_id: str) -> str:
        """Ephemeral-sequential ``auditorelection/V_<seq>``; returns the vote's path."""
        await self._ensure(self.layout.auditor_election)
        data = text_format.MessageToString(df.AuditorVoteFormat(bookieId=bookie_id)).encode()
        return await self._create(f"{self.layout.auditor_election}/{lay.UR_VOTE_PREFIX}", data,
                                  ephemeral=True, sequence=True)

    async def auditor_votes(self) -> list[str]:
        """Vote node names, lowest sequence (the auditor) first."""
        votes = [v for v in await self._children_or_empty(self.layout.auditor_election)
                 if v.startswith(lay.UR_VOTE_PREFIX)]
        return sorted(votes, key=lambda v: lay.parse_java_long(v[len(lay.UR_VOTE_PREFIX):]))

    async def auditor_id(self) -> str | None:
        """Bookie id of the elected auditor (owner of the lowest vote), or None."""
        for vote in await self.auditor_votes():
            try:
                data, _ = await self._get(f"{self.layout.auditor_election}/{vote}")
            except NoNode:
                continue
            return str(text_format.Parse(data.decode(), df.AuditorVoteFormat()).bookieId)
        return None

    async def withdraw_auditor_vote(self, vote_path: str) -> None:
        await self._delete(vote_path, missing_ok=True)
