"""What the operator reads and changes in the bookies' ZooKeeper metadata (through bookie.metadata).

Used only for what the REST API cannot tell: whether the metadata layout exists, which bookies are
registered, which ledgers still reference a bookie being decommissioned, how many ledgers are
under-replicated, and a bookie's cookie; to suspend re-replication while bookies are restarted on purpose
(``underreplication/disable``); and to publish the bookies' racks (``/bookies``, read by Pulsar's rack-aware
placement and by our client's). One ``MetadataStore`` per metadata service, kept open between ticks.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from bookie.metadata.data_loss import LedgerLoss, Repair, give_up_lost_entries, ledger_loss
from bookie.metadata.racks import BookieRack, InvalidRackInfo
from bookie.metadata.security import ZkSecurity, read_digest
from bookie.metadata.store import BadVersion, MetadataError, MetadataStore, NoNode

from bookie_operator.decisions.rebalance import LedgerLayout
from bookie_operator.memory_files import memory_file, path_of

# The operator's own ZooKeeper identity (``python -m bookie_operator --zk-*`` sets them; the chart mounts the
# Secrets): it must be the fleet's, or the operator cannot read or delete the znodes of a zkEnableSecurity fleet.
ENV_TLS = "BOOKIE_OPERATOR_ZK_TLS"
ENV_TLS_CA = "BOOKIE_OPERATOR_ZK_TLS_CA"
ENV_TLS_CERT = "BOOKIE_OPERATOR_ZK_TLS_CERT"
ENV_TLS_KEY = "BOOKIE_OPERATOR_ZK_TLS_KEY"
ENV_DIGEST_FILE = "BOOKIE_OPERATOR_ZK_DIGEST_FILE"
ENV_ENABLE_SECURITY = "BOOKIE_OPERATOR_ZK_ENABLE_SECURITY"


def security_from_env(env: Mapping[str, str]) -> ZkSecurity:
    """The operator's ZooKeeper security from its environment (reads the digest file: call at start-up)."""
    def path(name: str) -> Path | None:
        return Path(env[name]) if env.get(name) else None

    digest_file = path(ENV_DIGEST_FILE)
    return ZkSecurity(tls=env.get(ENV_TLS) == "true", ca=path(ENV_TLS_CA), certfile=path(ENV_TLS_CERT),
                      keyfile=path(ENV_TLS_KEY), digest=read_digest(digest_file) if digest_file else None,
                      acl=env.get(ENV_ENABLE_SECURITY) == "true")


class ClusterMetadata:
    """One cluster's metadata (``zk_servers`` + ``ledgers_root``); every method raises MetadataError when
    ZooKeeper cannot tell, never a guess."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    async def init_cluster(self) -> str:
        return await self.store.init_cluster()

    async def registered_bookies(self) -> set[str]:
        return set(await self.store.list_bookies()) | set(await self.store.list_bookies(readonly=True))

    async def ledgers_referencing(self, bookie_id: str, parallel: int = 32) -> int:
        """How many ledgers have ``bookie_id`` in any ensemble."""
        ids = await self.store.all_ledger_ids()
        gate = asyncio.Semaphore(parallel)

        async def references(ledger_id: int) -> bool:
            async with gate:
                try:
                    md = (await self.store.read_ledger_metadata(ledger_id)).value
                except NoNode:
                    return False  # deleted meanwhile
            return any(bookie_id in ensemble for ensemble in md.ensembles.values())

        return sum(await asyncio.gather(*(references(i) for i in ids)))

    async def ledgers_losing(self, bookie_id: str, parallel: int = 32) -> list[LedgerLoss]:
        """The ledgers with entries whose only replicas were on ``bookie_id`` (bookie.metadata.data_loss)."""
        ids = await self.store.all_ledger_ids()
        gate = asyncio.Semaphore(parallel)

        async def loss(ledger_id: int) -> LedgerLoss | None:
            async with gate:
                try:
                    md = (await self.store.read_ledger_metadata(ledger_id)).value
                except NoNode:
                    return None  # deleted meanwhile
            return ledger_loss(ledger_id, md, {bookie_id})

        return [lost for lost in await asyncio.gather(*(loss(i) for i in ids)) if lost is not None]

    async def ledger_layouts(self, parallel: int = 32) -> list[LedgerLayout]:
        """Every ledger's ensembles, size and state, for rebalancing (ledgers deleted meanwhile are left out)."""
        ids = await self.store.all_ledger_ids()
        gate = asyncio.Semaphore(parallel)

        async def layout(ledger_id: int) -> LedgerLayout | None:
            async with gate:
                try:
                    md = (await self.store.read_ledger_metadata(ledger_id)).value
                except NoNode:
                    return None
            return LedgerLayout(ledger_id, md.closed, md.length, md.last_entry_id, md.ensemble_size,
                                md.write_quorum_size, tuple((first, tuple(b)) for first, b in md.ensembles.items()))

        return [x for x in await asyncio.gather(*(layout(i) for i in ids)) if x is not None]

    async def give_up_lost_entries(self, ledger_id: int, bookie_id: str, live: list[str]) -> Repair | None:
        """Repair one ledger's metadata so that it no longer waits for ``bookie_id``'s lost entries; None when
        it lost nothing (deleted, or repaired before). A conditional write, retried when its writer (or
        autorecovery) changed the metadata meanwhile. Raises UnrepairableLoss (bookie.metadata.data_loss)."""
        while True:
            try:
                versioned = await self.store.read_ledger_metadata(ledger_id)
            except NoNode:
                return None
            repair = give_up_lost_entries(versioned.value, {bookie_id}, live, ledger_id)
            if not repair.lost:
                return None
            try:
                await self.store.write_ledger_metadata(ledger_id, repair.metadata, versioned.version)
            except BadVersion:
                continue
            except NoNode:
                return None
            return repair

    async def under_replicated(self, excluding: Collection[str] = (), parallel: int = 32) -> int:
        """Ledgers marked under-replicated; with ``excluding``, not those missing only these bookies (a dead
        bookie's own marks, which its decommission clears)."""
        ids = await self.store.list_underreplicated()
        if not excluding:
            return len(ids)
        gate = asyncio.Semaphore(parallel)

        async def someone_elses(ledger_id: int) -> bool:
            async with gate:
                mark = await self.store.get_underreplicated(ledger_id)
            # A mark gone meanwhile was replicated; one naming no bookie cannot be told whose it is.
            return mark is not None and (not mark.replicas or not set(mark.replicas) <= set(excluding))

        return sum(await asyncio.gather(*(someone_elses(i) for i in ids)))

    async def replication_disabled_by(self) -> bytes | None:
        return await self.store.replication_disabled_by()

    async def disable_replication_as(self, owner: bytes) -> bool:
        return await self.store.disable_replication_as(owner)

    async def enable_replication_of(self, owner: bytes) -> bool:
        return await self.store.enable_replication_of(owner)

    async def cookie_exists(self, bookie_id: str) -> bool:
        return await self.store.read_cookie(bookie_id) is not None

    async def delete_cookie(self, bookie_id: str) -> None:
        try:
            await self.store.delete_cookie(bookie_id)
        except NoNode:
            pass

    async def publish_racks(self, group: str, racks: Mapping[str, tuple[str, str | None]]) -> bool:
        """Make ``group`` of ``/bookies`` hold exactly ``racks`` (bookie id -> (rack, hostname)); other groups
        are left alone. True if the znode changed."""
        try:
            current = await self.store.read_rack_info()
        except InvalidRackInfo as exc:
            raise MetadataError(str(exc)) from None
        existing = set(((current.value if current else {}).get(group)) or {})
        return await self.store.update_rack_info(
            group, {b: BookieRack(rack, host) for b, (rack, host) in racks.items()}, remove=existing - set(racks))


@dataclass(frozen=True)
class ZkTlsIdentity:
    """A cluster's x509 identity for ZooKeeper, as PEM (its spec.tls.zookeeper Secret: ``ca.crt`` signs
    ZooKeeper's certificate, ``tls.crt``/``tls.key`` are the client certificate the bookies present)."""

    ca: bytes
    cert: bytes
    key: bytes = field(repr=False)

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(b"\0".join((self.ca, self.cert, self.key))).hexdigest()[:16]


class _MemoryPemFiles:
    """A ``ZkTlsIdentity`` as memory-only files (memfd): kazoo opens its TLS files by path at every connection,
    and a Secret's private key is never written to a disk. Open as long as the session that uses them."""

    def __init__(self, identity: ZkTlsIdentity) -> None:
        self._fds: list[int] = []
        try:
            self.ca = self._file("zk-ca.crt", identity.ca)
            self.cert = self._file("zk-client.crt", identity.cert)
            self.key = self._file("zk-client.key", identity.key)
        except BaseException:
            self.close()
            raise

    def _file(self, name: str, data: bytes) -> Path:
        fd = memory_file(name, data)
        self._fds.append(fd)
        return path_of(fd)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()


SessionKey = tuple[str, str, str | None, bool, str | None]   # servers, root, digest, acl, x509 fingerprint

IDLE_SESSION_CLOSE_S = 600.0   # every managed cluster asks at each tick (seconds apart), so idle means unused


class MetadataService:
    """The metadata of every cluster the operator manages, one ZooKeeper session per metadata service and
    identity. A session nobody asked for in ``IDLE_SESSION_CLOSE_S`` is closed: the identity it was opened with
    has been rotated away (a new digest is a new session), or its cluster was deleted."""

    def __init__(self, security: ZkSecurity | None = None, *,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._stores: dict[SessionKey, MetadataStore] = {}
        self._files: dict[SessionKey, _MemoryPemFiles] = {}
        self._last_used: dict[SessionKey, float] = {}
        self._lock = asyncio.Lock()
        self._monotonic = monotonic
        self.security = security

    def security_for(self, digest: str | None = None, acl: bool = False) -> ZkSecurity:
        """The operator's own settings (its flags), with a cluster's digest identity instead of its own
        (spec.metadataService.digestSecret) and CREATOR_ALL ACLs when the cluster asks for them."""
        base = self.security or ZkSecurity()
        return replace(base, digest=digest or base.digest, acl=base.acl or acl)

    async def cluster(self, zk_servers: str, ledgers_root: str, *, digest: str | None = None,
                      acl: bool = False, tls: ZkTlsIdentity | None = None) -> ClusterMetadata:
        """One session per metadata service and identity: clusters with their own digest or x509 identity
        (``tls``: presented instead of the operator's own certificate) get their own."""
        security = self.security_for(digest, acl)
        key: SessionKey = (zk_servers, ledgers_root, security.digest, security.acl,
                           tls.fingerprint if tls else None)
        async with self._lock:
            await self._close_idle(keep=key)
            self._last_used[key] = self._monotonic()
            store = self._stores.get(key)
            if store is None or not store.connected:
                await self._close(key)
                files = _MemoryPemFiles(tls) if tls is not None else None
                if files is not None:
                    security = replace(security, tls=True, ca=files.ca, certfile=files.cert, keyfile=files.key)
                store = MetadataStore(zk_servers, ledgers_root, session_timeout_ms=10000, connect_timeout_s=10,
                                      security=security)
                try:
                    await store.connect()
                except BaseException:
                    if files is not None:
                        files.close()
                    raise
                self._stores[key] = store
                if files is not None:
                    self._files[key] = files
            return ClusterMetadata(store)

    async def _close(self, key: SessionKey) -> None:
        store = self._stores.pop(key, None)
        if store is not None:
            await store.close()
        files = self._files.pop(key, None)
        if files is not None:
            files.close()

    @property
    def open_sessions(self) -> int:
        return len(self._stores)

    async def _close_idle(self, keep: SessionKey) -> None:
        now = self._monotonic()
        for key in [k for k, used in self._last_used.items() if k != keep and now - used > IDLE_SESSION_CLOSE_S]:
            del self._last_used[key]
            await self._close(key)

    async def close(self) -> None:
        async with self._lock:
            for key in list(self._stores):
                await self._close(key)
            self._last_used.clear()


__all__ = ["ClusterMetadata", "MetadataError", "MetadataService", "ZkTlsIdentity"]
