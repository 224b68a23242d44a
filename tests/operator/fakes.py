"""In-memory stand-ins for what the reconcile talks to, for unit tests of the whole reconcile (no cluster).

``FakeKube`` keeps objects in a dict and applies status writes as the API server does (an RFC 7386 merge
patch, refused when the result does not validate against the CRD's status schema), so a status field the
reconcile forgets to remove stays, exactly as on a real cluster. ``StatefulSets`` plays the StatefulSet
controller (pods from replicas with the template's labels, ready at once, revision labels). ``FakeBookie`` is
one bookie's admin API; its compaction finishes on the GC poll after it was triggered. ``FakeMetadata`` is the
cluster's ZooKeeper metadata. ``Clock`` is the time the reconcile reads.
"""

from __future__ import annotations

import base64
import builtins
import copy
import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from bookie.metadata.data_loss import LedgerLoss, Repair, give_up_lost_entries, ledger_loss
from bookie.metadata.ledger_metadata import LedgerMetadata
from bookie_operator import builders, models
from bookie_operator.decisions import GcInfo
from bookie_operator.decisions.rebalance import LedgerLayout
from bookie_operator.kube import KubeError
from bookie_operator.reconcile import Operator, Outcome, reconcile
from bookie_operator.reconcile.ports import AdminTls
from bookie_operator.zk import ZkTlsIdentity

from tests.operator.crd_schema import status_errors
from tests.operator.merge_patch import apply_merge_patch

Obj = dict[str, Any]
GIB = 1024**3
NS = "team"


@dataclass
class Clock:
    now: dt.datetime = dt.datetime(2026, 11, 24, 2, 47, 30, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


class OperatorCrashed(Exception):
    pass


@dataclass
class FakeKube:
    objects: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)     # (type, reason, message)
    applied: list[str] = field(default_factory=list)                     # "Kind/name" per apply
    deleted: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)                     # "Kind/name" per create
    status_patches: list[Obj] = field(default_factory=list)
    crash_before_status_write: bool = False     # the next status write "kills the operator" instead

    async def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        obj = self.objects.get((kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    async def get_metadata(self, kind: str, namespace: str, name: str) -> Obj | None:
        obj = self.objects.get((kind, namespace, name))
        return None if obj is None else {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                                         "metadata": copy.deepcopy(obj["metadata"])}

    async def list(self, kind: str, namespace: str, selector: str | None = None) -> list[Obj]:
        wanted = dict(part.split("=", 1) for part in selector.split(",")) if selector else {}
        return [copy.deepcopy(o) for (k, ns, _), o in sorted(self.objects.items())
                if k == kind and ns == namespace
                and all(o["metadata"].get("labels", {}).get(a) == b for a, b in wanted.items())]

    async def apply(self, obj: Obj) -> Obj:
        key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        live = self.objects.get(key, {})
        precondition = obj["metadata"].get("resourceVersion")
        if precondition is not None and (live.get("metadata") or {}).get("resourceVersion") != precondition:
            # As the API server: a resourceVersion in an applied object is an optimistic lock.
            raise KubeError(f"apply {key[0]}/{key[2]}: the object has been modified", 409)
        merged = {**copy.deepcopy(obj), "status": live.get("status", {})}
        if obj["kind"] == "PersistentVolumeClaim" and live:
            # The operator applies only the claim's size: the rest stays (server-side apply keeps other owners'
            # fields).
            merged = {**copy.deepcopy(live), "spec": apply_merge_patch(live.get("spec") or {}, obj["spec"])}
        if obj["kind"] == "Pod" and live:
            # The operator applies only labels to a pod (adoption): server-side apply keeps the rest.
            merged = copy.deepcopy(live)
            merged["metadata"]["labels"] = {**live["metadata"].get("labels", {}), **obj["metadata"]["labels"]}
        self.objects[key] = merged
        self.applied.append(f"{key[0]}/{key[2]}")
        return copy.deepcopy(merged)

    async def create(self, obj: Obj) -> Obj | None:
        """As the API server: 409 (None) when it exists; a Secret's stringData is stored base64 in data."""
        key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self.objects:
            return None
        stored = copy.deepcopy(obj)
        if "stringData" in stored:
            strings = stored.pop("stringData")
            stored["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in strings.items()}
        self.objects[key] = stored
        self.created.append(f"{key[0]}/{key[2]}")
        return copy.deepcopy(stored)

    async def delete(self, kind: str, namespace: str, name: str, *, propagation: str = "Background") -> bool:
        self.deleted.append(f"{kind}/{name}")
        return self.objects.pop((kind, namespace, name), None) is not None

    async def patch_status(self, namespace: str, name: str, status: Obj) -> None:
        if self.crash_before_status_write:
            self.crash_before_status_write = False
            raise OperatorCrashed("the operator died before writing status")
        obj = self.objects[(models.KIND, namespace, name)]
        patched = apply_merge_patch(obj.get("status") or {}, status)
        refused = status_errors(patched)
        if refused:   # the API server validates the whole status against the CRD and refuses the patch
            raise KubeError(f"BookieCluster {name} is invalid: {'; '.join(refused)}", 422)
        self.status_patches.append(status)
        obj["status"] = patched

    async def event(self, owner: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    # ------------------------------------------------------------------------------ test helpers
    def create_cluster(self, name: str, spec: Obj) -> None:
        self.objects[(models.KIND, NS, name)] = {
            "apiVersion": f"{models.GROUP}/{models.VERSION}", "kind": models.KIND,
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1,
                         "creationTimestamp": "2026-11-24T00:00:00Z"},
            "spec": spec}

    def cluster(self, name: str) -> Obj:
        return self.objects[(models.KIND, NS, name)]

    def patch_spec(self, name: str, spec: Obj) -> None:
        obj = self.cluster(name)
        obj["spec"] = apply_merge_patch(obj["spec"], spec)
        obj["metadata"]["generation"] += 1

    def reasons(self, reason: str) -> builtins.list[str]:
        return [m for _, r, m in self.events if r == reason]


@dataclass
class StatefulSets:
    """The StatefulSet controller's part: one Running, Ready pod per replica at the update revision. A template
    seen before gets its earlier revision back, as Kubernetes reuses an equal ControllerRevision (a change set
    back restarts no pod that never left it)."""

    kube: FakeKube
    revision: str = "rev-1"
    revisions: dict[str, str] = field(default_factory=dict)     # template digest -> its revision
    created: int = 0                                            # pods created so far (each gets its own uid)

    def settle(self, cluster: str) -> None:
        sts = self.kube.objects.get(("StatefulSet", NS, builders.statefulset_name(cluster)))
        if sts is None:
            return
        template = sts["spec"]["template"]
        digest = str(hash(repr(template)))
        if sts.get("status", {}).get("templateDigest") != digest:
            if digest in self.revisions:
                self.revision = self.revisions[digest]
            elif self.revisions:
                self.revision = f"rev-{len(self.revisions) + 1}"
            self.revisions[digest] = self.revision
            sts["status"] = {"templateDigest": digest, "updateRevision": self.revision}
        replicas = int(sts["spec"]["replicas"])
        for (kind, ns, name), _ in list(self.kube.objects.items()):
            ordinal = builders.ordinal_of(name)
            if kind == "Pod" and ordinal is not None and ordinal >= replicas:
                del self.kube.objects[(kind, ns, name)]
        for ordinal in range(replicas):
            key = ("Pod", NS, builders.pod_name(cluster, ordinal))
            if key not in self.kube.objects:
                self.created += 1
                self.kube.objects[key] = {
                    "kind": "Pod",
                    "metadata": {"name": key[2], "namespace": NS, "uid": f"pod-uid-{self.created}",
                                 "labels": {**builders.selector_labels(cluster),
                                            **(template.get("metadata") or {}).get("labels", {}),
                                            "controller-revision-hash": self.revision}},
                    "status": {"phase": "Running", "podIP": f"10.0.0.{ordinal + 1}",
                               "conditions": [{"type": "Ready", "status": "True"}]}}


@dataclass
class FakeBookie:
    used: float = 0.3
    read_only: bool = False
    total: int = 100 * GIB
    major: int = 0
    compaction_pending: bool = False
    calls: list[str] = field(default_factory=list)
    reachable: bool = True
    tokens: list[str | None] = field(default_factory=list)   # the admin token each client was made with
    read_only_reason: str = ""    # "journal-corrupt" or "forced": the REST switch can not make it writable
    moves: dict[int, tuple[str, str, str]] = field(default_factory=dict)   # ledger -> (state, source, target)

    def _call(self, what: str) -> None:
        from bookie_operator.bookie_client import BookieApiError
        if not self.reachable:
            raise BookieApiError(f"{what}: connection refused")
        self.calls.append(what)

    async def state(self) -> dict[str, Any]:
        self._call("state")
        return {"readOnly": self.read_only, "readOnlyReason": self.read_only_reason}

    async def info(self) -> tuple[int, int]:
        self._call("info")
        return int(self.total * (1 - self.used)), self.total

    async def set_read_only(self, read_only: bool) -> bool:
        from bookie_operator.bookie_client import BookieApiError
        self._call(f"set_read_only({read_only})")
        if self.read_only_reason in ("journal-corrupt", "forced") and not read_only:
            raise BookieApiError(f"HTTP 400: bookie is read-only ({self.read_only_reason})", 400)
        self.read_only = read_only
        return read_only

    async def trigger_gc(self, force_major: bool = True, force_minor: bool = True) -> None:
        self._call("trigger_gc")
        self.compaction_pending = True

    async def gc_info(self) -> GcInfo:
        self._call("gc_info")
        if self.compaction_pending:          # the compaction triggered earlier has finished by now
            self.compaction_pending = False
            self.major += 1
        return GcInfo(in_force_gc=False, compacting=False, major_count=self.major, minor_count=0,
                      last_major_ms=0, last_minor_ms=0)

    async def suspend_compaction(self, suspend: bool) -> None:
        self._call(f"suspend_compaction({suspend})")

    async def recover_bookie(self, bookie_ids: list[str]) -> None:
        self._call(f"recover_bookie({','.join(bookie_ids)})")

    async def move_replica(self, ledger_id: int, source: str, target: str, rate_bytes_per_s: int) -> None:
        self._call(f"move_replica({ledger_id},{source},{target})")
        self.moves[ledger_id] = ("running", source, target)

    async def replica_move_state(self, ledger_id: int) -> tuple[str, str | None] | None:
        self._call(f"replica_move_state({ledger_id})")
        known = self.moves.get(ledger_id)
        if known is None:
            return None
        return known[0], "the target could not read the replica" if known[0] == "failed" else None


@dataclass
class FakeClusterMetadata:
    registered: set[str] = field(default_factory=set)
    referencing: dict[str, int] = field(default_factory=dict)     # bookie id -> ledgers that reference it
    under_replicated_ledgers: int = 0
    marked_missing_only: dict[str, int] = field(default_factory=dict)   # bookie id -> its share of the above
    cookies: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    racks: dict[str, dict[str, tuple[str, str | None]]] = field(default_factory=dict)   # the /bookies groups
    ledgers: dict[int, LedgerMetadata] = field(default_factory=dict)   # for the data-loss checks only
    layouts: list[LedgerLayout] = field(default_factory=list)    # the ledgers' metadata, for rebalancing
    disabled_by: bytes | None = None     # underreplication/disable: None when replication is enabled

    async def init_cluster(self) -> str:
        self.calls.append("init_cluster")
        return "instance-1"

    async def registered_bookies(self) -> set[str]:
        return set(self.registered)

    async def ledgers_referencing(self, bookie_id: str) -> int:
        return self.referencing.get(bookie_id, 0)

    async def under_replicated(self, excluding: Collection[str] = ()) -> int:
        return self.under_replicated_ledgers - sum(self.marked_missing_only.get(b, 0) for b in set(excluding))

    async def ledgers_losing(self, bookie_id: str) -> builtins.list[LedgerLoss]:
        losses = (ledger_loss(i, md, {bookie_id}) for i, md in sorted(self.ledgers.items()))
        return [loss for loss in losses if loss is not None]

    async def give_up_lost_entries(self, ledger_id: int, bookie_id: str, live: builtins.list[str]) -> Repair | None:
        self.calls.append(f"give_up_lost_entries({ledger_id})")
        repair = give_up_lost_entries(self.ledgers[ledger_id], {bookie_id}, live, ledger_id)
        if not repair.lost:
            return None
        self.ledgers[ledger_id] = repair.metadata
        return repair

    async def replication_disabled_by(self) -> bytes | None:
        return self.disabled_by

    async def disable_replication_as(self, owner: bytes) -> bool:
        if self.disabled_by is not None:
            return False
        self.calls.append("disable_replication")
        self.disabled_by = owner
        return True

    async def enable_replication_of(self, owner: bytes) -> bool:
        if self.disabled_by != owner:
            return False
        self.calls.append("enable_replication")
        self.disabled_by = None
        return True

    async def cookie_exists(self, bookie_id: str) -> bool:
        return bookie_id in self.cookies

    async def delete_cookie(self, bookie_id: str) -> None:
        self.calls.append(f"delete_cookie({bookie_id})")
        self.cookies.discard(bookie_id)

    async def ledger_layouts(self) -> list[LedgerLayout]:
        return list(self.layouts)

    async def publish_racks(self, group: str, racks: dict[str, tuple[str, str | None]]) -> bool:
        changed = self.racks.get(group, {}) != racks
        self.racks[group] = dict(racks)
        return changed


@dataclass
class FakeMetadata:
    clusters: dict[tuple[str, str], FakeClusterMetadata] = field(default_factory=dict)

    identities: list[tuple[str | None, bool]] = field(default_factory=list)  # (digest, acl) of every call
    x509_identities: list[ZkTlsIdentity | None] = field(default_factory=list)  # tls of every call

    async def cluster(self, zk_servers: str, ledgers_root: str, *, digest: str | None = None,
                      acl: bool = False, tls: ZkTlsIdentity | None = None) -> FakeClusterMetadata:
        self.identities.append((digest, acl))
        self.x509_identities.append(tls)
        return self.clusters.setdefault((zk_servers, ledgers_root), FakeClusterMetadata())

    async def close(self) -> None:
        return None


@dataclass
class World:
    """A BookieCluster, the API server, its bookies and ZooKeeper, ticked by the reconcile."""

    kube: FakeKube = field(default_factory=FakeKube)
    clock: Clock = field(default_factory=Clock)
    metadata: FakeMetadata = field(default_factory=FakeMetadata)
    bookies: dict[str, FakeBookie] = field(default_factory=dict)     # pod IP -> bookie
    name: str = "bk"

    def __post_init__(self) -> None:
        self.statefulsets = StatefulSets(self.kube)
        self.running: set[tuple[str, str | None]] = set()
        self.operator = self.new_operator()

    def new_operator(self) -> Operator:
        """A fresh operator process: nothing remembered but what is stored in the API server."""
        return Operator(kube=self.kube, admin_for=self._admin_for,
                        metadata=self.metadata, now=self.clock, monotonic=lambda: self.clock.now.timestamp())

    def _admin_for(self, host: str, port: int, token: str | None, tls: AdminTls | None = None) -> FakeBookie:
        bookie = self.bookies.setdefault(host, FakeBookie())
        bookie.tokens.append(token)
        return bookie

    @property
    def zk(self) -> FakeClusterMetadata:
        spec = self.kube.cluster(self.name)["spec"]["metadataService"]
        return self.metadata.clusters.setdefault((spec["zkServers"], spec.get("ledgersRoot", "/ledgers")),
                                                 FakeClusterMetadata())

    def bookie(self, ordinal: int) -> FakeBookie:
        return self.bookies.setdefault(f"10.0.0.{ordinal + 1}", FakeBookie())

    def bookie_id(self, ordinal: int) -> str:
        return builders.bookie_id(self.name, NS, ordinal)

    async def tick(self, seconds: float = 5.0) -> Outcome:
        """The controllers act, the bookies register, then one reconcile; the clock moves on."""
        self.statefulsets.settle(self.name)
        # A pod re-created under the same name (a new uid) is a bookie that stopped and another that started.
        pods = {(name, obj["metadata"].get("uid")) for (kind, _, name), obj in self.kube.objects.items()
                if kind == "Pod"}
        for pod, _ in self.running - pods:     # its registration is an ephemeral znode
            self.zk.registered.discard(self.bookie_id(builders.ordinal_of(pod) or 0))
        for pod, _ in pods - self.running:     # a bookie that starts writes its cookie and registers
            self.zk.registered.add(self.bookie_id(builders.ordinal_of(pod) or 0))
            self.zk.cookies.add(self.bookie_id(builders.ordinal_of(pod) or 0))
        self.running = pods
        outcome = await reconcile(self.operator, self.kube.cluster(self.name))
        self.clock.advance(seconds)
        return outcome

    @property
    def status(self) -> Obj:
        return dict(self.kube.cluster(self.name).get("status") or {})


def cluster_spec(**overrides: Any) -> Obj:
    spec: Obj = {"replicas": 3, "ensembleSize": 2, "metadataService": {"zkServers": "zk:2181",
                                                                       "ledgersRoot": "/ledgers"}}
    spec.update(overrides)
    return spec


def own_secret_metadata(name: str, cluster: str = "bk") -> Obj:
    """The metadata of a Secret made for ``cluster`` by its user: labelled as the cluster's own, which the
    operator requires of every Secret the spec references."""
    return {"name": name, "namespace": NS, "labels": {f"{models.GROUP}/cluster": cluster}}
