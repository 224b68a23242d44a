"""The reconcile's two contexts: ``Operator`` (clients shared by every reconcile) and ``Tick`` (one reconcile of
one BookieCluster: what it observed, the status it builds, the Events it will post, what it waits for)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bookie.metadata.security import ZkSecurityError, parse_digest
from bookie.metadata.store import MetadataError

from bookie_operator import builders, decisions, models
from bookie_operator.bookie_client import BookieApiError
from bookie_operator.builders import Layout, Owner
from bookie_operator.decisions import ObservedBookie, ReadOnlyPlan, parse_time, retire
from bookie_operator.decisions.adopt import kept_layout
from bookie_operator.decisions.start_failures import StartFailure
from bookie_operator.decisions.tls import TlsVerdict
from bookie_operator.kube import KubeError
from bookie_operator.models import BookieClusterSpec, BookieClusterStatus
from bookie_operator.reconcile.ports import AdminFactory, BookieAdminApi, ClusterMetadataApi, KubeApi, MetadataApi, Obj
from bookie_operator.status_patch import merge_patch
from bookie_operator.zk import ZkTlsIdentity

log = logging.getLogger("bookie_operator.reconcile")
# A ZooKeeper credential's Secret is read again this often: a rotated one reaches new sessions within it.
ZK_SECRET_RECHECK_S = 60.0


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def _no_http(url: str) -> Any:
    raise BookieApiError(f"GET {url}: this operator has no HTTP client")


@dataclass
class Operator:
    """Long-lived clients shared by every reconcile."""

    kube: KubeApi
    admin_for: AdminFactory
    metadata: MetadataApi
    now: Callable[[], dt.datetime] = _utcnow
    monotonic: Callable[[], float] = time.monotonic
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # (cluster uid, kind, name) -> (digest of the desired object, when the live object last matched it)
    checked: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)
    # node name -> (its labels, when read): the bookies' zones change only with the nodes they run on
    node_labels: dict[str, tuple[dict[str, str], float]] = field(default_factory=dict)
    # (namespace, Secret name) -> (the admin API token it holds, when it was read)
    admin_tokens: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)
    # (namespace, Secret name, key) -> (the ZooKeeper digest it holds, when it was read)
    zk_digests: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict, repr=False)
    # (namespace, Secret name) -> (the x509 identity for ZooKeeper it holds, when it was read)
    zk_identities: dict[tuple[str, str], tuple[ZkTlsIdentity, float]] = field(default_factory=dict, repr=False)
    bookie_port: int = models.HTTP_PORT
    # The storage audit: the ClusterRole its Spark pods are bound to (the chart's), and a JSON reader of the
    # report store.
    audit_cluster_role: str = "bookie-operator-audit"
    fetch_json: Callable[[str], Awaitable[Any]] = field(default=_no_http)
    # The operator's own pods as NetworkPolicy peers (its namespace and labels), admitted to the admin port;
    # empty when it runs outside the cluster.
    operator_peers: list[Obj] = field(default_factory=list)
    # The kinds of escalating BookieCluster fields (decisions.escalations.KINDS) this operator's settings allow;
    # the others are refused as invalid specs.
    allowed_escalations: frozenset[str] = frozenset()
    # cluster uid -> (what was checked, when, the verdict on its certificates): Secrets are not read every tick.
    tls_verdicts: dict[str, tuple[str, float, TlsVerdict, bytes | None, tuple[bytes, bytes] | None]] = field(
        default_factory=dict)

    def lock(self, uid: str) -> asyncio.Lock:
        return self.locks.setdefault(uid, asyncio.Lock())

    async def close(self) -> None:
        await self.metadata.close()
        for close in self.closers:
            await close()


@dataclass
class Outcome:
    waiting: list[str] = field(default_factory=list)
    status: BookieClusterStatus | None = None

    @property
    def message(self) -> str:
        return "; ".join(self.waiting)


class Tick:
    """One reconcile of one BookieCluster. Steps read what earlier steps observed from it and add to it."""

    spec: BookieClusterSpec            # set by the first step (an invalid spec ends the tick)

    def __init__(self, op: Operator, body: Obj) -> None:
        self.op = op
        self.body = body
        meta = body["metadata"]
        self.name: str = meta["name"]
        self.namespace: str = meta["namespace"]
        self.uid: str = meta.get("uid", "")
        self.owner = Owner(self.name, self.namespace, self.uid)
        self.generation: int | None = meta.get("generation")
        self.now = op.now()
        self.created = parse_time(meta.get("creationTimestamp")) or self.now
        self.previous = models.parse_status(body.get("status"))
        self.status = self.previous.model_copy(deep=True)
        self.outcome = Outcome()
        self.events: list[tuple[str, str, str]] = []
        self.problems: list[str] = []          # what a step could not do: the Degraded condition says it
        # Observations, filled in by the steps in order.
        self.statefulset: Obj | None = None
        self.current_replicas: int | None = None
        self.bookies: list[ObservedBookie] = []
        self.admins: dict[int, BookieAdminApi] = {}
        self.admin_token: str | None = None     # what this tick presents to the bookies' admin APIs
        self.admin_ca: bytes | None = None      # the CA of their HTTPS (spec.tls.admin), None: plain HTTP
        self.admin_client: tuple[bytes, bytes] | None = None  # spec.tls.adminClient: (tls.crt, tls.key)
        self.replicas = 0                      # what the StatefulSet is given this tick
        self.plan = ReadOnlyPlan({})
        self.forced: dict[int, str] = {}       # ordinal -> when a forced GC was triggered this tick
        self.under_replicated: int | None = None
        self.registered: set[str] | None = None
        self.start_failures: dict[int, StartFailure] = {}   # ordinal -> why its container could not start
        self.nodes: dict[int, str] = {}                      # ordinal -> the node its pod is on
        self.racks: dict[int, str] = {}                      # ordinal -> its rack (published in /bookies)
        self.failure_reason: str | None = None               # the Degraded reason they give, if any
        self.restart_hold: str | None = None   # why no bookie may be restarted this tick (re-replication)

    # ----------------------------------------------------------------------------------- recording
    def event(self, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))
        log.info("event cluster=%s/%s type=%s reason=%s message=%s", self.namespace, self.name, type_, reason,
                 message)

    def condition(self, type_: str, status: bool | None, reason: str, message: str = "") -> None:
        self.status.conditions = decisions.set_condition(self.status.conditions, type_, status, reason, message,
                                                         self.now, self.generation)

    def was(self, type_: str) -> str | None:
        c = decisions.condition(self.previous.conditions, type_)
        return c.status if c else None

    def previous_message(self, type_: str) -> str | None:
        c = decisions.condition(self.previous.conditions, type_)
        return c.message if c else None

    def wait(self, what: str) -> None:
        self.outcome.waiting.append(what)

    @property
    def desired_replicas(self) -> int:
        """What the cluster should run: spec.replicas plus the bookies the operator added for disk pressure
        (kept in status, so the spec stays what its author or a GitOps controller wrote)."""
        return self.spec.replicas + self.status.scaled_up_by

    @property
    def layout(self) -> Layout:
        """The StatefulSet's names and paths: the operator's, or an adopted StatefulSet's (status.adoption)."""
        return builders.layout(self.name, self.spec, kept_layout(self.status.adoption))

    def bookie_id(self, ordinal: int) -> str:
        return builders.bookie_id(self.name, self.namespace, ordinal, self.spec.cluster_domain, self.layout.service)

    @property
    def decommissioning(self) -> int | None:
        if self.status.decommission:
            return self.status.decommission.ordinal
        return retire.old_bookie_runs(self.status.decommission_requests)    # a chosen one (spec.decommission)

    async def cluster_metadata(self) -> ClusterMetadataApi:
        """The cluster's metadata, on a session with its identity: spec.metadataService.digestSecret's digest
        (else the operator's own), spec.tls.zookeeper's client certificate and CA (else the operator's own),
        CREATOR_ALL ACLs with spec.config's zkEnableSecurity. A Secret that cannot be used raises
        ``MetadataError``, as ZooKeeper's own failures do."""
        ms = self.spec.metadata_service
        digest = await self._zk_digest() if ms.digest_secret is not None else None
        tls = self.spec.tls
        identity = await self._zk_tls_identity(tls.zookeeper.secret_name) if tls and tls.zookeeper else None
        acl = str(self.spec.config.get("zkEnableSecurity", "false")).lower() == "true"
        return await self.op.metadata.cluster(ms.zk_servers, ms.ledgers_root, digest=digest, acl=acl,
                                              tls=identity)

    async def _secret_data(self, name: str, source: str) -> dict[str, str]:
        try:
            secret = await self.op.kube.get("Secret", self.namespace, name)
        except KubeError as exc:
            raise MetadataError(f"{source}: {exc}") from None
        if secret is None:
            raise MetadataError(f"{source}: not found")
        return dict(secret.get("data") or {})

    async def _zk_digest(self) -> str:
        ref = self.spec.metadata_service.digest_secret
        assert ref is not None
        key = (self.namespace, ref.secret_name, ref.key)
        cached = self.op.zk_digests.get(key)
        if cached is not None and self.op.monotonic() - cached[1] < ZK_SECRET_RECHECK_S:
            return cached[0]
        source = f"spec.metadataService.digestSecret: Secret {ref.secret_name}"
        raw = (await self._secret_data(ref.secret_name, source)).get(ref.key)
        if raw is None:
            raise MetadataError(f"{source}: has no key {ref.key}")
        try:
            digest = parse_digest(base64.b64decode(raw, validate=True).decode(), f"{source}, key {ref.key}")
        except (binascii.Error, UnicodeDecodeError):
            raise MetadataError(f"{source}: key {ref.key} is not base64 of UTF-8 text") from None
        except ZkSecurityError as exc:
            raise MetadataError(str(exc)) from None
        self.op.zk_digests[key] = (digest, self.op.monotonic())
        return digest

    async def _zk_tls_identity(self, secret_name: str) -> ZkTlsIdentity:
        """spec.tls.zookeeper's Secret as the operator's x509 identity for this cluster's ZooKeeper (the
        bookies present the same certificate), read again every ``ZK_SECRET_RECHECK_S``."""
        key = (self.namespace, secret_name)
        cached = self.op.zk_identities.get(key)
        if cached is not None and self.op.monotonic() - cached[1] < ZK_SECRET_RECHECK_S:
            return cached[0]
        source = f"spec.tls.zookeeper: Secret {secret_name}"
        data = await self._secret_data(secret_name, source)
        pem: dict[str, bytes] = {}
        for name in ("ca.crt", "tls.crt", "tls.key"):
            if not data.get(name):
                raise MetadataError(f"{source}: has no key {name}")
            try:
                pem[name] = base64.b64decode(data[name], validate=True)
            except binascii.Error:
                raise MetadataError(f"{source}: key {name} is not base64") from None
        identity = ZkTlsIdentity(ca=pem["ca.crt"], cert=pem["tls.crt"], key=pem["tls.key"])
        self.op.zk_identities[key] = (identity, self.op.monotonic())
        return identity

    async def flush(self) -> None:
        """Write the status if it changed (a merge patch that removes what is gone), then post the Events.

        Status first: a transition is announced only once it is recorded, so an operator that dies in between
        never announces it twice (the next tick, reading the recorded state, has nothing to announce).
        """
        new = self.status.model_dump(by_alias=True, exclude_none=True)
        old = self.previous.model_dump(by_alias=True, exclude_none=True)
        if new != old:
            await self.op.kube.patch_status(self.namespace, self.name, merge_patch(old, new))
        self.outcome.status = self.status
        for type_, reason, message in self.events:
            await self.op.kube.event(self.body, type_, reason, message)
        self.events.clear()
