"""The one idempotent reconcile of a BookieCluster: observe everything, decide (``decisions``), act, record.

Called by Kopf from create/update/resume and from a timer, so the actual state is re-read every tick
(level-based). Steps, in order:

1. parse the spec (an invalid one becomes a condition and an Event; nothing is applied);
2. observe: the StatefulSet, the pods, and every bookie's state, disk and GC through its admin REST API;
3. scale-down: start or advance the decommission state machine kept in ``status.decommission``;
4. apply the desired ConfigMap, Services, PDB and StatefulSet (server-side apply; skipped when the live
   object already holds every desired field);
5. read-only control from disk usage, forced GC above the force-compaction ratio, the compaction window;
6. the compaction schedule (one bookie at a time), the rolling restart (one pod at a time), scale-up under
   disk pressure;
7. status and conditions, written only when they changed.

What it waits for is returned (``Outcome.waiting``); the Kopf handler turns that into ``kopf.TemporaryError``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bookie_operator import builders, decisions, metrics, models, start_failures, zk
from bookie_operator.bookie_client import BookieAdmin, BookieApiError
from bookie_operator.builders import Owner
from bookie_operator.decisions import GcInfo, ObservedBookie, iso, parse_time
from bookie_operator.kube import Kube, KubeError
from bookie_operator.models import BookieClusterSpec, BookieClusterStatus, BookieStatus, InvalidSpec

log = logging.getLogger("bookie_operator.reconcile")
DRIFT_CHECK_S = 300.0
Obj = dict[str, Any]


@dataclass
class Operator:
    """Long-lived clients shared by every reconcile."""

    kube: Kube
    http: aiohttp.ClientSession
    metadata: zk.MetadataService = field(default_factory=zk.MetadataService)
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # (cluster uid, kind, name) -> (digest of the desired object, when the live object last matched it)
    checked: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)
    bookie_port: int = models.HTTP_PORT

    def lock(self, uid: str) -> asyncio.Lock:
        return self.locks.setdefault(uid, asyncio.Lock())

    async def close(self) -> None:
        await self.metadata.close()
        await self.http.close()
        await self.kube.close()


@dataclass
class Outcome:
    waiting: list[str] = field(default_factory=list)
    status: BookieClusterStatus | None = None

    @property
    def message(self) -> str:
        return "; ".join(self.waiting)


class Tick:
    """One reconcile of one object: the observations and the status being built."""

    def __init__(self, op: Operator, body: Obj) -> None:
        self.op = op
        self.body = body
        meta = body["metadata"]
        self.name: str = meta["name"]
        self.namespace: str = meta["namespace"]
        self.uid: str = meta.get("uid", "")
        self.generation: int | None = meta.get("generation")
        self.created = parse_time(meta.get("creationTimestamp")) or op.now()
        self.previous = models.parse_status(body.get("status"))
        self.status = self.previous.model_copy(deep=True)
        self.now = op.now()
        self.outcome = Outcome()
        self.events: list[tuple[str, str, str]] = []
        self.admins: dict[int, BookieAdmin] = {}
        self.forced: dict[int, str] = {}       # ordinal -> when a forced GC was triggered this tick

    # ------------------------------------------------------------------------------- helpers
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

    def wait(self, what: str) -> None:
        self.outcome.waiting.append(what)

    async def flush(self) -> None:
        for type_, reason, message in self.events:
            await self.op.kube.event(self.body, type_, reason, message)
        self.events.clear()
        new = self.status.model_dump(by_alias=True, exclude_none=True)
        old = self.previous.model_dump(by_alias=True, exclude_none=True)
        if new != old:
            # A merge patch: fields that disappeared must be nulled explicitly.
            patch: Obj = {**{k: None for k in old if k not in new}, **new}
            await self.op.kube.patch_status(self.namespace, self.name, patch)
        self.outcome.status = self.status


async def reconcile(op: Operator, body: Obj) -> Outcome:
    uid = body["metadata"].get("uid", body["metadata"]["name"])
    with metrics.RECONCILE_SECONDS.time():
        async with op.lock(uid):
            # Level-based: the object as it is now, not the (possibly older) copy an event or timer carried,
            # so a status written by the previous tick is never acted on twice.
            fresh = await op.kube.get(models.KIND, body["metadata"]["namespace"], body["metadata"]["name"])
            if fresh is None or fresh["metadata"].get("uid") != body["metadata"].get("uid"):
                return Outcome()
            tick = Tick(op, fresh)
            try:
                await _reconcile(tick)
                metrics.RECONCILES.labels("waiting" if tick.outcome.waiting else "done").inc()
            except Exception:
                metrics.RECONCILES.labels("error").inc()
                raise
            finally:
                await tick.flush()
            return tick.outcome


async def _reconcile(t: Tick) -> None:
    try:
        spec = models.parse_spec(t.body.get("spec") or {})
    except InvalidSpec as exc:
        message = str(exc)
        if t.was("Degraded") != "True" or _message(t.previous, "Degraded") != message:
            t.event("Warning", "InvalidSpec", message)
        t.condition("Ready", False, "InvalidSpec", message)
        t.condition("Degraded", True, "InvalidSpec", message)
        t.status.observed_generation = t.generation
        return
    owner = Owner(t.name, t.namespace, t.uid)
    kube = t.op.kube
    if not await _metadata_ready(t, spec):
        return
    sts = await kube.get("StatefulSet", t.namespace, builders.statefulset_name(t.name))
    current = int(sts["spec"]["replicas"]) if sts else None
    pods = await kube.list("Pod", t.namespace, builders.label_selector(t.name))
    observed = await _observe(t, spec, pods, current)
    failures = start_failures.observe(t.name, pods)
    await _reclaim(t, spec, failures)

    degraded: list[str] = []
    await _decommission(t, spec, observed, current, degraded)
    replicas = decisions.statefulset_replicas(spec.replicas, current, t.status.decommission)
    await _apply(t, owner, spec, replicas, degraded, sts)

    plan = await _read_only(t, spec, observed)
    await _forced_gc(t, spec, observed)
    await _compaction(t, spec, observed)
    await _window(t, spec, observed)
    ur = await _rolling(t, spec, observed, sts)
    await _scale_up(t, spec, plan, observed, current)
    registered = await _registered(t, spec)
    _record(t, spec, observed, plan, sts, replicas, degraded, ur, registered, failures)


async def _registered(t: Tick, spec: BookieClusterSpec) -> set[str] | None:
    """Bookie ids registered in ZooKeeper (writable or read-only); None when ZooKeeper cannot tell."""
    try:
        store = await _store(t, spec)
        return set(await store.list_bookies()) | set(await store.list_bookies(readonly=True))
    except zk.MetadataError as exc:
        log.warning("cluster=%s/%s: cannot list registered bookies: %s", t.namespace, t.name, exc)
        return None


async def _metadata_ready(t: Tick, spec: BookieClusterSpec) -> bool:
    """The BookKeeper metadata layout exists (created once, idempotently, for Python and Java bookies)."""
    if t.status.instance_id:
        return True
    try:
        t.status.instance_id = await (await _store(t, spec)).init_cluster()
    except zk.MetadataError as exc:
        message = f"metadata service {spec.metadata_service.zk_servers}{spec.metadata_service.ledgers_root}: {exc}"
        if t.was("Degraded") != "True":
            t.event("Warning", "MetadataServiceUnavailable", message)
        t.condition("Degraded", True, "MetadataServiceUnavailable", message)
        t.condition("Ready", False, "MetadataServiceUnavailable", message)
        t.wait(message)
        return False
    t.event("Normal", "MetadataInitialized", f"BookKeeper metadata at {spec.metadata_service.ledgers_root} "
            f"(instance {t.status.instance_id})")
    return True


def _message(status: BookieClusterStatus, type_: str) -> str | None:
    c = decisions.condition(status.conditions, type_)
    return c.message if c else None


# ----------------------------------------------------------------------------------------------- observe
async def _observe(t: Tick, spec: BookieClusterSpec, pods: list[Obj], current: int | None) -> list[ObservedBookie]:
    by_ordinal: dict[int, Obj] = {}
    for pod in pods:
        ordinal = builders.ordinal_of(pod["metadata"]["name"])
        if ordinal is not None and pod["metadata"]["name"] == builders.pod_name(t.name, ordinal):
            by_ordinal[ordinal] = pod
    ordinals = sorted(set(by_ordinal) | set(range(current if current is not None else spec.replicas)))

    async def one(ordinal: int) -> ObservedBookie:
        pod = by_ordinal.get(ordinal)
        base = dict(ordinal=ordinal, pod=builders.pod_name(t.name, ordinal),
                    bookie_id=builders.bookie_id(t.name, t.namespace, ordinal, spec.cluster_domain))
        if pod is None:
            return ObservedBookie(**base, exists=False)  # type: ignore[arg-type]
        st = pod.get("status", {})
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions", []))
        info: dict[str, Any] = dict(
            exists=True, ready=ready, terminating=bool(pod["metadata"].get("deletionTimestamp")),
            revision=pod["metadata"].get("labels", {}).get("controller-revision-hash"))
        ip = st.get("podIP")
        if ip and st.get("phase") == "Running" and not info["terminating"]:
            admin = BookieAdmin(t.op.http, ip, t.op.bookie_port)
            t.admins[ordinal] = admin
            try:
                state = await admin.state()
                free, total = await admin.info()
                info.update(reachable=True, read_only=bool(state.get("readOnly")), free_bytes=free,
                            total_bytes=total)
                metrics.BOOKIE_REQUESTS.labels("ok").inc()
            except BookieApiError as exc:
                metrics.BOOKIE_REQUESTS.labels("error").inc()
                log.debug("bookie %s unreachable: %s", base["pod"], exc)
            if info.get("reachable"):
                try:
                    info["gc"] = await admin.gc_info()
                except (BookieApiError, ValueError, TypeError, AttributeError):
                    info["gc"] = None
        return ObservedBookie(**base, **info)  # type: ignore[arg-type]

    return list(await asyncio.gather(*(one(o) for o in ordinals)))


async def _store(t: Tick, spec: BookieClusterSpec) -> Any:
    return await t.op.metadata.store(spec.metadata_service.zk_servers, spec.metadata_service.ledgers_root)


async def _under_replicated(t: Tick, spec: BookieClusterSpec) -> int | None:
    try:
        return await zk.under_replicated(await _store(t, spec))
    except zk.MetadataError as exc:
        t.wait(f"ZooKeeper: {exc}")
        return None


# ------------------------------------------------------------------------------------------- scale-down
async def _decommission(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie], current: int | None,
                        degraded: list[str]) -> None:
    state = t.status.decommission
    if state is None:
        if current is None:
            return
        ordinal = decisions.ordinal_to_decommission(current, spec.replicas)
        if ordinal is None:
            return
        pod = builders.pod_name(t.name, ordinal)
        state = decisions.start_decommission(ordinal, pod, builders.bookie_id(t.name, t.namespace, ordinal,
                                                                                spec.cluster_domain), t.now)
        t.event("Normal", "DecommissionStarted", f"decommissioning {pod} ({state.bookie_id}): replicas "
                f"{current} -> {spec.replicas}")
    bookie = next((b for b in observed if b.ordinal == state.ordinal), None)
    facts_ledgers: int | None = None
    facts_ur: int | None = None
    cookie: bool | None = None
    if state.phase in ("Recovering", "AwaitingReplication"):
        try:
            store = await _store(t, spec)
            facts_ledgers = await zk.ledgers_referencing(store, state.bookie_id)
            facts_ur = await zk.under_replicated(store)
        except zk.MetadataError as exc:
            t.wait(f"ZooKeeper: {exc}")
    if state.phase == "DeletingCookie":
        try:
            cookie = await zk.cookie_exists(await _store(t, spec), state.bookie_id)
        except zk.MetadataError as exc:
            t.wait(f"ZooKeeper: {exc}")
    claims = 0
    if state.phase == "ApplyingPvcPolicy":
        names = set(builders.volume_claim_names(t.name, spec, state.ordinal))
        pvcs = await t.op.kube.list("PersistentVolumeClaim", t.namespace)
        claims = sum(1 for p in pvcs if p["metadata"]["name"] in names)
    facts = decisions.DecommissionFacts(
        read_only=bookie.read_only if bookie else None, ledgers_referencing=facts_ledgers,
        under_replicated=facts_ur, cookie_exists=cookie, pod_exists=bool(bookie and bookie.exists),
        claims_remaining=claims)
    step = decisions.decommission_step(state, facts, spec, t.now)
    new_state = step.status
    for action in step.actions:
        admin = t.admins.get(state.ordinal)
        try:
            if action in ("set-read-only", "set-writable") and admin is not None:
                await admin.set_read_only(action == "set-read-only")
            elif action == "request-recovery" and new_state is not None:
                survivors = [t.admins[b.ordinal] for b in observed
                             if b.ordinal != state.ordinal and b.reachable and b.ordinal in t.admins]
                if not survivors:
                    raise BookieApiError("no reachable bookie to run the recovery")
                await survivors[0].recover_bookie([state.bookie_id])
                new_state = new_state.model_copy(update={"recovery_requested_at": iso(t.now)})
                t.event("Normal", "RecoveryRequested", f"re-replication of {state.bookie_id} requested")
            elif action == "delete-cookie":
                await zk.delete_cookie(await _store(t, spec), state.bookie_id)
                t.event("Normal", "CookieDeleted", f"cookie of {state.bookie_id} deleted")
            elif action == "delete-claims":
                for claim in builders.volume_claim_names(t.name, spec, state.ordinal):
                    await t.op.kube.delete("PersistentVolumeClaim", t.namespace, claim)
                t.event("Normal", "VolumesDeleted", f"volumes of {state.pod} deleted (pvcPolicy Delete)")
        except (BookieApiError, zk.MetadataError, KubeError) as exc:
            if new_state is not None:
                new_state = new_state.model_copy(update={"message": f"{action}: {exc}"})
            t.wait(f"decommission {state.pod}: {action}: {exc}")
            if action == "request-recovery":
                degraded.append(f"decommission of {state.pod} cannot request re-replication: {exc}")
    if new_state is not None and new_state.phase != state.phase:
        metrics.DECOMMISSION_STEPS.labels(new_state.phase).inc()
        t.event("Normal", "Decommissioning", f"{state.pod}: {state.phase} -> {new_state.phase}")
    if step.waiting:
        t.wait(f"decommission {state.pod}: waiting for {step.waiting}")
        if new_state is not None and new_state.phase == "AwaitingReplication":
            waited = (t.now - (parse_time(new_state.phase_since) or t.now)).total_seconds()
            if waited > spec.scale_down.recovery_timeout_seconds:
                degraded.append(f"decommission of {state.pod} stalled: {step.waiting}")
    if step.finished:
        t.status.decommissioned = [*t.status.decommissioned, state.bookie_id][-20:]
        t.event("Normal", "Decommissioned", f"{state.pod} ({state.bookie_id}) decommissioned")
    if step.cancelled:
        t.event("Normal", "DecommissionCancelled", f"{state.pod}: spec.replicas raised to {spec.replicas}")
    t.status.decommission = new_state


# ------------------------------------------------------------------------------------------------ apply
def _contains(live: Any, desired: Any) -> bool:
    """Does ``live`` already hold every field of ``desired`` (the API server adds defaults)?"""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(_contains(live.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(live) == len(desired) and all(
            _contains(a, b) for a, b in zip(live, desired, strict=True))
    return bool(live == desired or (desired == {} and live is None))


async def _apply(t: Tick, owner: Owner, spec: BookieClusterSpec, replicas: int, degraded: list[str],
                 sts: Obj | None) -> None:
    """Apply what differs. The StatefulSet (read this tick anyway) is compared every tick; the ConfigMap,
    Services and PDB are read again only when their desired content changed or every DRIFT_CHECK_S, which
    halves the API requests of an idle cluster while still undoing manual edits."""
    kube = t.op.kube
    mono = time.monotonic()
    for obj in builders.desired_objects(owner, spec, replicas):
        kind, name = obj["kind"], obj["metadata"]["name"]
        key = (t.uid, kind, name)
        digest = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
        if kind == "StatefulSet":
            live = sts
        else:
            seen = t.op.checked.get(key)
            if seen is not None and seen[0] == digest and mono - seen[1] < DRIFT_CHECK_S:
                metrics.APPLIES.labels(kind, "unchanged").inc()
                continue
            live = await kube.get(kind, t.namespace, name)
        if live is not None and _contains(live, obj):
            t.op.checked[key] = (digest, mono)
            metrics.APPLIES.labels(kind, "unchanged").inc()
            continue
        t.op.checked.pop(key, None)
        try:
            await kube.apply(obj)
            metrics.APPLIES.labels(kind, "applied").inc()
            t.event("Normal", "Created" if live is None else "Updated", f"{kind}/{name} "
                    f"{'created' if live is None else 'updated'} (server-side apply)")
        except KubeError as exc:
            metrics.APPLIES.labels(kind, "error").inc()
            if kind == "StatefulSet" and exc.status == 422 and live is not None:
                # An immutable field changed (volumeClaimTemplates, selector...): re-create the StatefulSet
                # without touching its pods or volumes; the next tick applies the new one and adopts them.
                await kube.delete(kind, t.namespace, name, propagation="Orphan")
                t.event("Normal", "StatefulSetRecreated", f"{name}: immutable fields changed ({exc}); "
                        "deleted with orphan propagation, pods and volumes kept")
                t.wait("StatefulSet re-creation")
                continue
            degraded.append(f"apply {kind}/{name}: {exc}")
            t.event("Warning", "ApplyFailed", f"{kind}/{name}: {exc}")


# ------------------------------------------------------------------------------------ read-only control
async def _read_only(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie]) -> decisions.ReadOnlyPlan:
    previous = {b.ordinal: b.read_only_reason for b in t.previous.bookies}
    decommissioning = t.status.decommission.ordinal if t.status.decommission else None
    plan = decisions.plan_read_only(observed, spec.disk_policy, spec.ensemble_size, previous, decommissioning)
    for b in observed:
        d = plan.decisions.get(b.ordinal)
        if d is None or b.ordinal == decommissioning or b.read_only == d.read_only:
            continue
        admin = t.admins[b.ordinal]
        try:
            await admin.set_read_only(d.read_only)
        except BookieApiError as exc:
            t.event("Warning", "ReadOnlyChangeFailed", f"{b.pod}: {exc}")
            continue
        metrics.READ_ONLY_CHANGES.labels("read-only" if d.read_only else "writable").inc()
        prev = previous.get(b.ordinal) or ""
        if d.read_only:
            t.event("Normal", "BookieReadOnly", f"{b.pod} set read-only: {d.reason}")
        elif prev.startswith("operator:"):
            t.event("Normal", "BookieWritable", f"{b.pod} set writable again: disk "
                    f"{(b.used_fraction or 0):.0%} below low-water mark {spec.disk_policy.writable_low_water_mark:.0%}")
        else:
            log.info("re-asserted writable cluster=%s/%s pod=%s (the bookie had switched itself to read-only)",
                     t.namespace, t.name, b.pod)
    if plan.disk_pressure:
        held = ", ".join(builders.pod_name(t.name, o) for o in plan.held_writable)
        message = (f"{held} above the high-water mark kept writable: at least ensembleSize "
                   f"{spec.ensemble_size} bookies must stay writable")
        if t.was("DiskPressure") != "True" or _message(t.previous, "DiskPressure") != message:
            t.event("Warning", "DiskPressure", message)
        t.condition("DiskPressure", True, "TooFewWritableBookies", message)
    else:
        ro = [builders.pod_name(t.name, o) for o, d in sorted(plan.decisions.items())
              if d.read_only and o != decommissioning]
        if ro:
            t.condition("DiskPressure", True, "BookiesReadOnly", f"read-only for disk usage: {', '.join(ro)}")
        else:
            t.condition("DiskPressure", False, "DiskUsageNormal", "")
    return plan


async def _forced_gc(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie]) -> None:
    last = {b.ordinal: parse_time(b.forced_gc_at) for b in t.previous.bookies}
    for b in observed:
        if b.gc is None or not decisions.should_force_gc(b, spec.disk_policy, last.get(b.ordinal), t.now):
            continue
        try:
            await t.admins[b.ordinal].trigger_gc(force_major=True, force_minor=True)
        except BookieApiError as exc:
            log.warning("forced GC failed cluster=%s/%s pod=%s: %s", t.namespace, t.name, b.pod, exc)
            continue
        t.forced[b.ordinal] = iso(t.now)
        metrics.FORCED_GCS.labels("disk-usage").inc()
        t.event("Normal", "ForcedGC", f"{b.pod}: disk {(b.used_fraction or 0):.0%} >= force-compaction ratio "
                f"{spec.disk_policy.force_compaction_ratio:.0%}, forced GC triggered")


# ------------------------------------------------------------------------------------------- compaction
async def _compaction(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie]) -> None:
    decommissioning = t.status.decommission.ordinal if t.status.decommission else None
    ordinals = [b.ordinal for b in observed if b.reachable and b.ordinal != decommissioning]
    gc = {b.ordinal: b.gc for b in observed if b.reachable}
    status, actions, notes = decisions.compaction_tick(spec.compaction, t.status.compaction, ordinals, gc, t.now,
                                                       t.created)
    for note in notes:
        t.event("Warning" if "skipped" in note else "Normal", "CompactionSchedule", note)
    for action in actions:
        pod = builders.pod_name(t.name, action.ordinal)
        if action.kind == "trigger":
            try:
                await t.admins[action.ordinal].trigger_gc(spec.compaction.force_major, spec.compaction.force_minor)
                t.event("Normal", "CompactionStarted", f"{pod}: scheduled forced compaction started")
            except (BookieApiError, KeyError) as exc:
                t.event("Warning", "CompactionFailed", f"{pod}: {exc}")
                if status.run is not None:
                    status.run.active = None
                metrics.COMPACTIONS.labels("failed").inc()
        elif action.kind == "finished":
            metrics.COMPACTIONS.labels("finished").inc()
            t.event("Normal", "CompactionFinished", f"{pod}: scheduled forced compaction finished")
        else:
            metrics.COMPACTIONS.labels(action.kind).inc()
            t.event("Warning", "CompactionSkipped" if action.kind == "skipped" else "CompactionTimeout",
                    f"{pod}: {action.message}")
    t.status.compaction = status


async def _window(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie]) -> None:
    window = spec.gc.window
    if window is None:
        return
    inside = decisions.in_window(window.start, window.end, t.now)
    for b in observed:
        if b.gc is not None:
            try:
                await t.admins[b.ordinal].suspend_compaction(not inside)
            except BookieApiError:
                continue


# ------------------------------------------------------------------------------------- rolling restarts
async def _rolling(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie], sts: Obj | None) -> int | None:
    if sts is None or t.status.decommission is not None:
        return None
    revision = sts.get("status", {}).get("updateRevision")
    if not any(b.exists and b.revision != revision for b in observed) or revision is None:
        return None
    ur = await _under_replicated(t, spec)
    pod, waiting = decisions.pod_to_restart(observed, revision, ur, int(sts["spec"]["replicas"]))
    if waiting:
        t.wait(f"rolling restart: waiting for {waiting}")
    if pod is not None:
        await t.op.kube.delete("Pod", t.namespace, pod.pod)
        metrics.RESTARTS.inc()
        t.event("Normal", "RollingRestart", f"{pod.pod} restarted to apply revision {revision}")
        t.wait(f"rolling restart of {pod.pod}")
    return ur


async def _scale_up(t: Tick, spec: BookieClusterSpec, plan: decisions.ReadOnlyPlan, observed: list[ObservedBookie],
                    current: int | None) -> None:
    settled = current == spec.replicas and all(b.ready for b in observed) and t.status.decommission is None
    target = decisions.scale_up_for_pressure(spec, plan, settled)
    if target is None:
        return
    await t.op.kube.patch_replicas(t.namespace, t.name, target)
    t.event("Normal", "ScaledUp", f"disk pressure: replicas {spec.replicas} -> {target} "
            f"(diskPolicy.scaleUp.maxReplicas {spec.disk_policy.scale_up.max_replicas})")


# ------------------------------------------------------------------------------------------------ status
def _record(t: Tick, spec: BookieClusterSpec, observed: list[ObservedBookie], plan: decisions.ReadOnlyPlan,
            sts: Obj | None, replicas: int, degraded: list[str], ur: int | None,
            registered: set[str] | None = None, failures: dict[int, start_failures.StartFailure] | None = None) -> None:
    s = t.status
    failures = failures or {}
    previous = {b.ordinal: b for b in t.previous.bookies}
    forced = t.forced
    bookies = []
    for b in decisions.sort_by_ordinal(observed):
        if not b.exists:
            continue
        d = plan.decisions.get(b.ordinal)
        reason: str | None = None
        if d is not None and d.read_only:
            reason = d.reason
        elif b.read_only:
            reason = "bookie: switched itself to read-only (operator re-asserting writable)"
        state = "Unknown" if b.read_only is None else ("ReadOnly" if (d.read_only if d else b.read_only)
                                                      else "Writable")
        last_ms = max(b.gc.last_major_ms, b.gc.last_minor_ms) if b.gc else 0
        prev = previous.get(b.ordinal)
        used = b.used_fraction
        bookies.append(BookieStatus(
            pod=b.pod, ordinal=b.ordinal, bookie_id=b.bookie_id, ready=b.ready, state=state,  # type: ignore[arg-type]
            read_only_reason=reason,
            disk_used_fraction=round(used, 3) if used is not None else None,
            disk_total_bytes=b.total_bytes,
            last_compaction_time=iso(dt.datetime.fromtimestamp(last_ms / 1000, dt.UTC)) if last_ms > 0 else None,
            next_compaction_time=s.compaction.next_schedule_time,
            major_compactions=b.gc.major_count if b.gc else None,
            minor_compactions=b.gc.minor_count if b.gc else None,
            forced_gc_at=forced.get(b.ordinal) or (prev.forced_gc_at if prev else None),
            start_failure=start_failures.status_of(failures[b.ordinal], prev, iso(t.now))
            if b.ordinal in failures else None))
        if used is not None:
            metrics.DISK_USED.labels(t.namespace, t.name, b.pod).set(used)
    s.bookies = bookies
    ready = sum(1 for b in observed if b.exists and b.ready)
    writable = sum(1 for b in bookies if b.state == "Writable" and b.ready)
    metrics.WRITABLE.labels(t.namespace, t.name).set(writable)
    s.replicas = sum(1 for b in observed if b.exists)
    s.ready_replicas = ready
    s.writable_bookies = writable
    s.label_selector = builders.label_selector(t.name)
    s.config_checksum = builders.config_checksum(spec)
    s.observed_generation = t.generation

    revision = (sts or {}).get("status", {}).get("updateRevision")
    outdated = [b.pod for b in observed if b.exists and revision and b.revision != revision]
    progressing: list[str] = []
    if replicas != spec.replicas or (sts and int(sts["spec"]["replicas"]) != replicas):
        progressing.append(f"scaling to {spec.replicas}")
    if outdated:
        progressing.append(f"rolling {', '.join(outdated)}")
    if s.compaction.run is not None:
        progressing.append(f"compacting (run for {s.compaction.run.scheduled_for})")
    if ready < spec.replicas:
        progressing.append(f"{ready}/{spec.replicas} bookies ready")
    t.condition("Progressing", bool(progressing), "Reconciling" if progressing else "Settled", "; ".join(progressing))
    if s.decommission is not None:
        dec = s.decommission
        t.condition("Decommissioning", True, dec.phase,
                    f"{dec.pod} ({dec.bookie_id}): {dec.message}".rstrip(": "))
    else:
        t.condition("Decommissioning", False, "Idle", "")
    if writable < spec.ensemble_size and ready >= spec.ensemble_size:
        degraded.append(f"only {writable} writable bookies, ensembleSize is {spec.ensemble_size}")
    if ur:
        degraded.append(f"{ur} under-replicated ledgers")
    failed = _start_failures(t, spec, failures, degraded)
    t.condition("Degraded", bool(degraded), failed or ("Problems" if degraded else "Healthy"), "; ".join(degraded))
    all_ready = ready >= spec.replicas and s.replicas == spec.replicas and s.decommission is None
    unregistered = [b.pod for b in observed if b.exists and registered is not None
                    and b.bookie_id not in registered]
    if unregistered:
        all_ready = False
        t.wait(f"{', '.join(unregistered)} not registered in ZooKeeper yet")
    if all_ready and writable >= spec.ensemble_size:
        t.condition("Ready", True, "BookiesReady", f"{ready} bookies ready, {writable} writable")
    else:
        why = "Decommissioning" if s.decommission else ("NotEnoughWritable" if all_ready else "BookiesNotReady")
        t.condition("Ready", False, why, f"{ready}/{spec.replicas} ready, {writable} writable")
        if not all_ready:
            t.wait(f"{ready}/{spec.replicas} bookies ready")


def _start_failures(t: Tick, spec: BookieClusterSpec, failures: dict[int, start_failures.StartFailure],
                    degraded: list[str]) -> str | None:
    """Bookies that cannot start: one Warning Event per new reason, first in Degraded; returns its reason."""
    for f in start_failures.transitions(failures, t.previous.bookies):
        t.event("Warning", f.reason, start_failures.event_message(f))
    found = start_failures.degraded(failures, t.name, spec, t.status.instance_id)
    if found is None:
        return None
    degraded.insert(0, found.message)
    t.wait(found.message)
    return found.reason


async def _reclaim(t: Tick, spec: BookieClusterSpec, failures: dict[int, start_failures.StartFailure]) -> None:
    """spec.storage.reclaimVolumesOfInstance: delete the claims, then the pod, of bookies on that instance's volumes."""
    for f in start_failures.to_reclaim(failures, spec):
        claims = builders.volume_claim_names(t.name, spec, f.ordinal)
        try:
            for claim in claims:
                await t.op.kube.delete("PersistentVolumeClaim", t.namespace, claim)
            await t.op.kube.delete("Pod", t.namespace, f.pod)
        except KubeError as exc:
            t.wait(f"reclaiming the volumes of {f.pod}: {exc}")
            continue
        t.event("Warning", "VolumesReclaimed", f"{f.pod}: claims {', '.join(claims)} of BookKeeper instance "
                f"{spec.storage.reclaim_volumes_of_instance} deleted (spec.storage.reclaimVolumesOfInstance), "
                "the bookie starts again empty")


def dumps(status: BookieClusterStatus) -> str:
    return json.dumps(status.model_dump(by_alias=True, exclude_none=True), sort_keys=True)


__all__ = ["GcInfo", "Operator", "Outcome", "reconcile"]
