"""Publish the bookies' racks (their nodes' zones) in ZooKeeper's ``/bookies``, where Pulsar's rack-aware
placement and our client's read them. Decided by ``decisions.racks``; written only when it changes."""

from __future__ import annotations

import logging

from bookie_operator import builders
from bookie_operator.decisions import racks
from bookie_operator.reconcile.context import Tick
from bookie_operator.zk import MetadataError

log = logging.getLogger("bookie_operator.reconcile")
NODE_LABELS_TTL_S = 60.0


def rack_group(t: Tick) -> str:
    return f"{t.namespace}/{t.name}"


async def _node_labels(t: Tick, node: str) -> dict[str, str] | None:
    cached = t.op.node_labels.get(node)
    mono = t.op.monotonic()
    if cached is not None and mono - cached[1] < NODE_LABELS_TTL_S:
        return cached[0]
    obj = await t.op.kube.get("Node", "", node)
    if obj is None:
        return None
    labels = dict(obj["metadata"].get("labels") or {})
    t.op.node_labels[node] = (labels, mono)
    return labels


async def publish_racks(t: Tick) -> None:
    if not t.spec.publish_racks:
        return
    labels = {}
    for node in set(t.nodes.values()):
        found = await _node_labels(t, node)
        if found is not None:
            labels[node] = found
    ordinals = [b.ordinal for b in t.bookies if b.ordinal < t.replicas or b.exists]
    previous = {b.ordinal: b.rack for b in t.previous.bookies if b.rack}
    t.racks = racks.bookie_racks(ordinals, t.nodes, labels, previous)
    published = {t.bookie_id(o): rack
                 for o, rack in t.racks.items()}
    try:
        changed = await (await t.cluster_metadata()).publish_racks(
            rack_group(t), {bookie: (rack, bookie.rpartition(":")[0]) for bookie, rack in published.items()})
    except MetadataError as exc:
        log.warning("cluster=%s/%s: cannot publish racks: %s", t.namespace, t.name, exc)
        t.problems.append(f"racks not published in /bookies: {exc}")
        return
    if changed:
        t.event("Normal", "RacksPublished", "/bookies group " + rack_group(t) + ": " + (", ".join(
            f"{builders.pod_name(t.name, o)} {rack}" for o, rack in sorted(t.racks.items())) or "no bookie has a zone"))
