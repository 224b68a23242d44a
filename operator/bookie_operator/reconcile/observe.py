"""The first steps of a tick: parse the spec, make sure the metadata exists, observe pods and bookies."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bookie_operator import builders, decisions, metrics, models
from bookie_operator.bookie_client import MAX_REASON_CHARS, BookieApiError
from bookie_operator.decisions import ObservedBookie, escalations, start_failures
from bookie_operator.kube import KubeError
from bookie_operator.models import InvalidSpec
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.ports import AdminTls, Obj
from bookie_operator.zk import MetadataError

log = logging.getLogger("bookie_operator.reconcile")


async def parse_spec(t: Tick) -> bool:
    """The spec, validated; an invalid one becomes a condition and one Event, and nothing is applied."""
    try:
        t.spec = models.parse_spec(t.body.get("spec") or {})
    except InvalidSpec as exc:
        _invalid(t, str(exc))
        return False
    try:
        secrets = await _secret_ownership(t)
    except KubeError as exc:
        # Ownership that cannot be read is not assumed: nothing is applied until it can be.
        t.wait(f"reading the spec's Secrets: {exc}")
        return False
    refused = escalations.refused(t.name, t.spec, t.op.allowed_escalations, secrets)
    if refused:
        _invalid(t, "; ".join(refused))
        return False
    awaited = escalations.awaited(t.name, t.spec, secrets)
    if awaited:
        _awaiting_secrets(t, "; ".join(awaited))
        return False
    t.status.scaled_up_by = decisions.capped_scale_up(t.spec, t.status.scaled_up_by)
    return True


async def _secret_ownership(t: Tick) -> escalations.Ownership:
    """Whether each Secret the spec references is the cluster's own, from its metadata alone (one metadata-only
    GET per Secret per tick: a foreign Secret's data never reaches the operator); nothing is read when the
    operator's settings allow foreign Secrets anyway."""
    if escalations.FOREIGN_SECRETS in t.op.allowed_escalations:
        return {}
    names = sorted({name for _, name in escalations.secret_references(t.spec)})
    found = await asyncio.gather(*(t.op.kube.get_metadata("Secret", t.namespace, name) for name in names))
    return {name: None if secret is None else escalations.owns(t.name, t.uid, secret.get("metadata") or {})
            for name, secret in zip(names, found, strict=True)}


def _invalid(t: Tick, message: str) -> None:
    if t.was("Degraded") != "True" or t.previous_message("Degraded") != message:
        t.event("Warning", "InvalidSpec", message)
    for c in decisions.invalid_spec_conditions(message):
        t.condition(c.type, c.status, c.reason, c.message)
    t.status.observed_generation = t.generation


def _awaiting_secrets(t: Tick, message: str) -> None:
    """Referenced Secrets that do not exist yet: not Ready and Degraded, naming each field and Secret, one Event
    per new message, and the reconcile waits; the tick that finds them judges whose they are."""
    if t.was("Degraded") != "True" or t.previous_message("Degraded") != message:
        t.event("Warning", "SecretMissing", message)
    t.condition("Degraded", True, "SecretMissing", message)
    t.condition("Ready", False, "SecretMissing", message)
    t.wait(message)


async def ensure_metadata(t: Tick) -> bool:
    """The BookKeeper metadata layout exists (created once, idempotently, for Python and Java bookies)."""
    if t.status.instance_id:
        return True
    ms = t.spec.metadata_service
    try:
        t.status.instance_id = await (await t.cluster_metadata()).init_cluster()
    except MetadataError as exc:
        message = f"metadata service {ms.zk_servers}{ms.ledgers_root}: {exc}"
        if t.was("Degraded") != "True":
            t.event("Warning", "MetadataServiceUnavailable", message)
        t.condition("Degraded", True, "MetadataServiceUnavailable", message)
        t.condition("Ready", False, "MetadataServiceUnavailable", message)
        t.wait(message)
        return False
    t.event("Normal", "MetadataInitialized", f"BookKeeper metadata at {ms.ledgers_root} "
            f"(instance {t.status.instance_id})")
    return True


async def observe(t: Tick) -> None:
    """The StatefulSet, the bookie pods, and each running bookie's state, disk and GC through its admin API."""
    kube = t.op.kube
    t.statefulset = await kube.get("StatefulSet", t.namespace, builders.statefulset_name(t.name))
    t.current_replicas = int(t.statefulset["spec"]["replicas"]) if t.statefulset else None
    pods = await kube.list("Pod", t.namespace, builders.label_selector(t.name))
    by_ordinal: dict[int, Obj] = {}
    for pod in pods:
        ordinal = builders.ordinal_of(pod["metadata"]["name"])
        if ordinal is not None and pod["metadata"]["name"] == builders.pod_name(t.name, ordinal):
            by_ordinal[ordinal] = pod
    expected = t.current_replicas if t.current_replicas is not None else t.spec.replicas
    ordinals = sorted(set(by_ordinal) | set(range(expected)))
    t.bookies = list(await asyncio.gather(*(_observe_bookie(t, o, by_ordinal.get(o)) for o in ordinals)))
    t.nodes = {o: str(p["spec"]["nodeName"]) for o, p in by_ordinal.items() if (p.get("spec") or {}).get("nodeName")}
    t.start_failures = start_failures.observe(t.name, pods)


async def _observe_bookie(t: Tick, ordinal: int, pod: Obj | None) -> ObservedBookie:
    base: dict[str, Any] = dict(ordinal=ordinal, pod=builders.pod_name(t.name, ordinal),
                                bookie_id=t.bookie_id(ordinal))
    if pod is None:
        return ObservedBookie(**base, exists=False)
    st = pod.get("status", {})
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions", []))
    info: dict[str, Any] = dict(
        exists=True, ready=ready, terminating=bool(pod["metadata"].get("deletionTimestamp")),
        revision=pod["metadata"].get("labels", {}).get("controller-revision-hash"),
        implementation=pod["metadata"].get("labels", {}).get(builders.IMPLEMENTATION_LABEL))
    ip = st.get("podIP")
    if ip and st.get("phase") == "Running" and not info["terminating"]:
        host = t.bookie_id(ordinal).rpartition(":")[0]
        client_cert, client_key = t.admin_client or (None, None)
        ours = (info["implementation"] or t.spec.implementation) == "bookie-fleet"
        # Apache BookKeeper's admin API is plain HTTP whatever spec.tls.admin says (that HTTPS is its inspector's),
        # and ignores tokens: it is sent none, so the token never crosses the network where nothing checks it.
        tls = AdminTls(t.admin_ca, host, client_cert, client_key) if t.admin_ca is not None and ours else None
        # With spec.tls.admin but no CA to verify it yet (its Secret missing or incomplete), the call goes out
        # without the token: a token is never sent over plain HTTP to a bookie that should speak HTTPS.
        https_expected = t.spec.tls is not None and t.spec.tls.admin is not None
        token = t.admin_token if ours and (tls is not None or not https_expected) else None
        admin = t.op.admin_for(ip, t.op.bookie_port, token, tls)
        t.admins[ordinal] = admin
        try:
            state = await admin.state()
            free, total = await admin.info()
            info.update(reachable=True, read_only=bool(state.get("readOnly")), free_bytes=free, total_bytes=total,
                        read_only_reason=state.get("readOnlyReason") or None)
            metrics.BOOKIE_REQUESTS.labels("ok").inc()
        except BookieApiError as exc:
            metrics.BOOKIE_REQUESTS.labels("error").inc()
            info["unknown_reason"] = str(exc)[:MAX_REASON_CHARS]
            log.debug("bookie %s unreachable: %s", base["pod"], exc)
        if info.get("reachable"):
            try:
                info["gc"] = await admin.gc_info()
            except (BookieApiError, ValueError, TypeError, AttributeError):
                info["gc"] = None
    return ObservedBookie(**base, **info)


async def observe_registrations(t: Tick) -> None:
    """Bookie ids registered in ZooKeeper (writable or read-only); None when ZooKeeper cannot tell."""
    try:
        t.registered = await (await t.cluster_metadata()).registered_bookies()
    except MetadataError as exc:
        log.warning("cluster=%s/%s: cannot list registered bookies: %s", t.namespace, t.name, exc)
        t.registered = None


async def observe_under_replication(t: Tick) -> int | None:
    try:
        return await (await t.cluster_metadata()).under_replicated()
    except MetadataError as exc:
        t.wait(f"ZooKeeper: {exc}")
        return None
