"""Bookie registration and cluster initialisation (BookKeeper's ``RegistrationManager``): the layout znodes,
the instance id, and each bookie's writable or read-only ephemeral registration."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

from google.protobuf import text_format

from bookie.metadata import layout as lay
from bookie.metadata.session import LayoutMismatch, NodeExists, NoNode, RegistrationError, ZkSession, event_setter
from bookie.protocol.proto import DataFormats_pb2 as _df
from bookie.waits import wait_event

df: Any = _df


class BookieRegistration(ZkSession):
    """Cluster layout and bookie registration over one ZooKeeper session."""

    # ------------------------------------------------------------ cluster

    async def init_cluster(self) -> str:
        """Create whatever part of the cluster layout is missing (idempotent); returns the instance id."""
        L = self.layout
        await self._ensure(L.root)
        for path in (L.available, L.readonly, L.cookies):
            await self._ensure(path)
        if await self._call("exists", L.layout) is None:
            with contextlib.suppress(NodeExists):
                await self._create(L.layout, lay.LAYOUT_DATA)
        await self.check_layout()
        await self._init_underreplication()
        if await self._call("exists", L.instance_id) is None:
            with contextlib.suppress(NodeExists):
                await self._create(L.instance_id, str(uuid.uuid4()).encode())
        return await self.instance_id()

    async def check_layout(self) -> None:
        """Refuse clusters whose LAYOUT names another ledger manager (our paths would be wrong)."""
        try:
            data, _ = await self._get(self.layout.layout)
        except NoNode as exc:
            raise LayoutMismatch(f"{self.layout.layout} is missing: cluster not initialised") from exc
        lines = data.decode(errors="replace").split("\n")
        manager = lines[1].rsplit(":", 1)[0] if len(lines) > 1 else ""
        if manager != lay.HIERARCHICAL_FACTORY:
            raise LayoutMismatch(f"cluster layout {data!r} is not {lay.HIERARCHICAL_FACTORY}")

    async def _init_underreplication(self) -> None:
        L = self.layout
        await self._ensure(L.underreplication)
        wanted = df.LedgerRereplicationLayoutFormat(type=lay.UR_LAYOUT_TYPE, version=lay.UR_LAYOUT_VERSION)
        if await self._call("exists", L.ur_layout) is None:
            with contextlib.suppress(NodeExists):
                await self._create(L.ur_layout, text_format.MessageToString(wanted).encode())
        await self._ensure(L.ur_ledgers)
        await self._ensure(L.ur_locks)

    async def instance_id(self) -> str:
        try:
            data, _ = await self._get(self.layout.instance_id)
        except NoNode as exc:
            raise NoNode(f"{self.layout.instance_id} missing: cluster not initialised") from exc
        return data.decode()

    # ------------------------------------------------------------ registration

    async def register_bookie(self, bookie_id: str, readonly: bool, service_info: bytes = b"") -> None:
        """Register as writable or read-only, with BookKeeper's order of transitions.

        Read-only: create ``available/readonly/<id>`` then delete ``available/<id>``. Writable: create
        ``available/<id>`` then delete ``available/readonly/<id>``. So the bookie is never invisible.
        """
        if readonly:
            await self._ensure(self.layout.readonly)
        await self._register_at(self.layout.bookie(bookie_id, readonly), service_info)
        await self._delete(self.layout.bookie(bookie_id, not readonly), missing_ok=True)

    async def _register_at(self, path: str, service_info: bytes) -> None:
        # The dead session expires after its timeout, measured by ZooKeeper from its last heartbeat: allow twice.
        deadline = time.monotonic() + 2 * self.session_timeout_ms / 1000 + 1
        while True:
            gone = asyncio.Event()
            stat = await self._call("exists", path, watch=event_setter(asyncio.get_running_loop(), gone))
            if stat is None:
                break
            if stat.ephemeralOwner == self.session_id:
                return  # already ours
            # A previous incarnation's session may still be alive: wait up to zkTimeout for it to expire.
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RegistrationError(f"{path} is held by session 0x{stat.ephemeralOwner:x} and did not "
                                        f"disappear within {self.session_timeout_ms} ms")
            await wait_event(gone, min(remaining, 0.5))
        try:
            await self._create(path, service_info, ephemeral=True)
        except NodeExists as exc:
            raise RegistrationError(f"{path} was registered concurrently by another session") from exc

    async def unregister_bookie(self, bookie_id: str, readonly: bool) -> None:
        await self._delete(self.layout.bookie(bookie_id, readonly), missing_ok=True)

    async def list_bookies(self, readonly: bool = False) -> list[str]:
        """Registered bookie ids (writable ones exclude the ``readonly`` child)."""
        path = self.layout.readonly if readonly else self.layout.available
        try:
            children = await self._children(path)
        except NoNode:
            return []
        return sorted(c for c in children if readonly or c != lay.READONLY)

    async def bookie_service_info(self, bookie_id: str) -> bytes | None:
        """The data of a bookie's registration (writable or read-only); None when it is not registered."""
        for readonly in (False, True):
            try:
                data, _ = await self._get(self.layout.bookie(bookie_id, readonly))
            except NoNode:
                continue
            return data
        return None
