"""``BookKeeper``: the client entry point (create, open, delete ledgers) over ZooKeeper metadata.

Ledger metadata is written with ``bookie.metadata`` in BookKeeper's own format and layout, so the Java client
opens ledgers made here and the reverse.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from types import TracebackType

from bookie.client import errors as e
from bookie.client.config import ClientConfig
from bookie.client.connection import BookieAddressResolver, BookieClient
from bookie.client.ledger import LedgerHandle
from bookie.client.placement import PlacementPolicy, RackAwarePlacement, placement_policy
from bookie.client.recovery import recover_ledger
from bookie.metadata import store as ms
from bookie.metadata.ledger_metadata import LedgerMetadata, new_ledger_metadata
from bookie.metadata.racks import InvalidRackInfo
from bookie.protocol.entry import DigestType

log = logging.getLogger("bookie.client")


class BookKeeper:
    """A ledger client. ``async with BookKeeper(ClientConfig(zk_servers=...)) as bk: ...``

    ``store``: an already connected ``MetadataStore`` to share (then the caller closes it).
    """

    def __init__(self, config: ClientConfig, *, store: ms.MetadataStore | None = None,
                 placement: PlacementPolicy | None = None) -> None:
        self.config = config
        self._own_store = store is None
        self.store = store or ms.MetadataStore(config.zk_servers, config.ledgers_root,
                                               session_timeout_ms=config.zk_session_timeout_ms,
                                               security=config.zk_security)
        self.client = BookieClient(config, BookieAddressResolver(self.store.bookie_service_info))
        self.placement = placement or placement_policy(config.placement, config.racks, config.default_rack)
        self._racks_read_at: float | None = None

    async def start(self) -> BookKeeper:
        if self._own_store:
            await self.store.connect()
        return self

    async def close(self) -> None:
        await self.client.close()
        if self._own_store:
            await self.store.close()

    async def __aenter__(self) -> BookKeeper:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # ------------------------------------------------------------ bookies

    async def writable_bookies(self) -> list[str]:
        """Bookies registered under ``available/`` (read-only ones are never used for writes). Placement asks
        for them before each choice, so the racks are refreshed here too."""
        await self._refresh_racks()
        return await self.store.list_bookies(readonly=False)

    async def _refresh_racks(self) -> None:
        """With ``rack_resolver="zookeeper"``: the rack placement's mapping from ``/bookies`` (configured racks
        win), read again when older than ``rack_refresh_s``. Unreadable rack information keeps the last one."""
        if self.config.rack_resolver != "zookeeper" or not isinstance(self.placement, RackAwarePlacement):
            return
        now = time.monotonic()
        if self._racks_read_at is not None and now - self._racks_read_at < self.config.rack_refresh_s:
            return
        try:
            racks = await self.store.bookie_racks()
        except (ms.MetadataError, InvalidRackInfo) as exc:
            log.warning("rack information unreadable, keeping the last: %s", exc)
            return
        self._racks_read_at = now
        self.placement.update_racks({**racks, **self.config.racks})

    async def readonly_bookies(self) -> list[str]:
        return await self.store.list_bookies(readonly=True)

    # ------------------------------------------------------------ ledgers

    async def create_ledger(self, ensemble_size: int = 3, write_quorum: int | None = None,
                            ack_quorum: int | None = None, *, digest_type: DigestType = DigestType.CRC32C,
                            password: bytes = b"", custom_metadata: Mapping[str, bytes] | None = None,
                            ledger_id: int | None = None) -> LedgerHandle:
        """A new open ledger on ``ensemble_size`` bookies chosen by the placement policy."""
        wq = write_quorum or ensemble_size
        aq = ack_quorum or wq
        if not 0 < aq <= wq <= ensemble_size:
            raise e.IncorrectParameter(f"need 0 < ackQuorum ({aq}) <= writeQuorum ({wq}) <= ensembleSize "
                                       f"({ensemble_size})")
        writable = await self.writable_bookies()
        ensemble = self.placement.new_ensemble(ensemble_size, wq, writable, self.client.health.quarantined())
        md = new_ledger_metadata(ensemble, wq, aq, digest_type=DigestType(digest_type), password=password,
                                 ctime=int(time.time() * 1000), custom_metadata=custom_metadata)
        if ledger_id is None:
            created = await self.store.create_ledger(md)
            ledger_id, version = created.value, created.version
        else:
            version = await self.store.create_ledger_metadata(ledger_id, md)
        return LedgerHandle(self, ledger_id, md, version, password, writable=True)

    async def ledger_metadata(self, ledger_id: int) -> ms.Versioned[LedgerMetadata]:
        try:
            return await self.store.read_ledger_metadata(ledger_id)
        except ms.NoSuchLedger as exc:
            raise e.NoSuchLedger(f"ledger {ledger_id} does not exist") from exc

    async def open_ledger(self, ledger_id: int, password: bytes = b"", *, recovery: bool = True,
                          digest_type: DigestType | None = None) -> LedgerHandle:
        """Open for reading. ``recovery=True`` fences and closes an open ledger first (its writer stops);
        ``recovery=False`` leaves it open, for tailing readers (LAC from ``read_last_add_confirmed``)."""
        versioned = await self.ledger_metadata(ledger_id)
        md = versioned.value
        if md.password is not None and md.password != password:
            raise e.UnauthorizedAccess(f"wrong password for ledger {ledger_id}")
        if digest_type is not None and md.digest_type is not None and DigestType(digest_type) != md.digest_type:
            raise e.IncorrectParameter(f"ledger {ledger_id} uses digest {md.digest_type.name}, "
                                       f"not {DigestType(digest_type).name}")
        handle = LedgerHandle(self, ledger_id, md, versioned.version, password, writable=False)
        if recovery and not md.closed:
            await recover_ledger(handle)
        return handle

    async def delete_ledger(self, ledger_id: int) -> None:
        """Delete the metadata; the bookies garbage-collect the data."""
        try:
            await self.store.delete_ledger_metadata(ledger_id)
        except ms.NoSuchLedger as exc:
            raise e.NoSuchLedger(f"ledger {ledger_id} does not exist") from exc

    async def list_ledgers(self) -> list[int]:
        return await self.store.all_ledger_ids()
