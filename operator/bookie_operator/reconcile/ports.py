"""What the reconcile needs from the outside world, as typed interfaces.

The real implementations are ``bookie_operator.kube.Kube`` (the Kubernetes API), ``bookie_client.BookieAdmin``
(a bookie's admin REST API) and ``zk.MetadataService`` (the bookies' ZooKeeper metadata); the reconcile's
unit tests run the same code against in-memory ones.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from bookie.metadata.data_loss import LedgerLoss, Repair

from bookie_operator.decisions import GcInfo
from bookie_operator.decisions.rebalance import LedgerLayout
from bookie_operator.zk import ZkTlsIdentity

Obj = dict[str, Any]


class KubeApi(Protocol):
    async def get(self, kind: str, namespace: str, name: str) -> Obj | None: ...

    async def get_metadata(self, kind: str, namespace: str, name: str) -> Obj | None: ...

    async def list(self, kind: str, namespace: str, selector: str | None = None) -> list[Obj]: ...

    async def apply(self, obj: Obj) -> Obj: ...

    async def create(self, obj: Obj) -> Obj | None: ...

    async def delete(self, kind: str, namespace: str, name: str, *, propagation: str = "Background") -> bool: ...

    async def patch_status(self, namespace: str, name: str, status: Obj) -> None: ...

    async def event(self, owner: Obj, type_: str, reason: str, message: str) -> None: ...


class BookieAdminApi(Protocol):
    """One bookie's admin REST API (ours and Apache BookKeeper's answer the same paths)."""

    async def state(self) -> dict[str, Any]: ...

    async def info(self) -> tuple[int, int]: ...

    async def set_read_only(self, read_only: bool) -> bool: ...

    async def trigger_gc(self, force_major: bool = True, force_minor: bool = True) -> None: ...

    async def gc_info(self) -> GcInfo: ...

    async def suspend_compaction(self, suspend: bool) -> None: ...

    async def recover_bookie(self, bookie_ids: list[str]) -> None: ...

    async def move_replica(self, ledger_id: int, source: str, target: str, rate_bytes_per_s: int) -> None: ...

    async def replica_move_state(self, ledger_id: int) -> tuple[str, str | None] | None: ...


@dataclass(frozen=True)
class AdminTls:
    """HTTPS to a bookie's admin API: the CA its certificate must chain to, and the name it must carry (the pod's
    host name: the operator dials the pod IP, which certificates do not name)."""

    ca_pem: bytes
    server_hostname: str
    # spec.tls.adminClient: the operator's certificate chain and key (PEM), presented to every bookie
    client_certificate: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)


class AdminFactory(Protocol):
    """(pod IP, admin port, bearer token of the admin API, HTTPS or not) -> that bookie's admin API."""

    def __call__(self, host: str, port: int, token: str | None, tls: AdminTls | None = None) -> BookieAdminApi: ...


class ClusterMetadataApi(Protocol):
    """What the operator reads and changes in one cluster's BookKeeper metadata."""

    async def init_cluster(self) -> str: ...

    async def registered_bookies(self) -> set[str]: ...

    async def ledgers_referencing(self, bookie_id: str) -> int: ...

    async def under_replicated(self, excluding: Collection[str] = ()) -> int: ...

    async def ledgers_losing(self, bookie_id: str) -> list[LedgerLoss]: ...

    async def give_up_lost_entries(self, ledger_id: int, bookie_id: str, live: list[str]) -> Repair | None: ...

    async def replication_disabled_by(self) -> bytes | None: ...

    async def disable_replication_as(self, owner: bytes) -> bool: ...

    async def enable_replication_of(self, owner: bytes) -> bool: ...

    async def cookie_exists(self, bookie_id: str) -> bool: ...

    async def delete_cookie(self, bookie_id: str) -> None: ...

    async def publish_racks(self, group: str, racks: dict[str, tuple[str, str | None]]) -> bool: ...

    async def ledger_layouts(self) -> list[LedgerLayout]: ...


class MetadataApi(Protocol):
    async def cluster(self, zk_servers: str, ledgers_root: str, *, digest: str | None = None,
                      acl: bool = False, tls: ZkTlsIdentity | None = None) -> ClusterMetadataApi: ...

    async def close(self) -> None: ...
