"""The scheduler's choice among the runner's nodes: its own and the nodes it emulates.

A Node created through the API with the label ``localkube.io/emulated-by=<runner's node>`` is run by that
runner too: it keeps it Ready, schedules pods onto it and runs them, all on this machine. Such nodes carry
whatever labels the creator gave them (``topology.kubernetes.io/zone`` for zone tests), so the API objects
look as on a cluster of several nodes, while the processes share one machine.

The choice follows the default scheduler's filters that matter here, ``nodeSelector`` and taints
(``NoSchedule``/``NoExecute`` ones must be tolerated), then spreads: the node with the fewest pods of the same
owner (a StatefulSet's pods land one per node while nodes are free), then the fewest pods, then the runner's
own node, then by name. Affinity, topology spread constraints and resources are not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]
EMULATED_BY = "localkube.io/emulated-by"


def tolerates(tolerations: Sequence[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def unfit(pod: Obj, node: Obj) -> str | None:
    """Why ``pod`` cannot go to ``node`` (the scheduler's words), or None."""
    labels = node["metadata"].get("labels") or {}
    selector = pod["spec"].get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items() if k != "kubernetes.io/arch"):
        return "didn't match Pod's node selector"
    tolerations = pod["spec"].get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return f"had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    return None


def _owner(pod: Obj) -> str | None:
    refs = pod["metadata"].get("ownerReferences") or []
    return str(refs[0].get("uid")) if refs else None


def pick_node(pod: Obj, nodes: Sequence[Obj], bound: Mapping[str, Sequence[Obj]], own: str) -> tuple[str | None, str]:
    """(node name, "") for the chosen node, or (None, the FailedScheduling message)."""
    fits = []
    reasons: dict[str, int] = {}
    for node in nodes:
        why = unfit(pod, node)
        if why is None:
            fits.append(node["metadata"]["name"])
        else:
            reasons[why] = reasons.get(why, 0) + 1
    if not fits:
        detail = ", ".join(f"{n} node(s) {why}" for why, n in sorted(reasons.items()))
        return None, f"0/{len(nodes)} nodes are available: {detail}."
    owner = _owner(pod)

    def load(name: str) -> tuple[int, int, bool, str]:
        pods = bound.get(name, [])
        siblings = sum(1 for p in pods if owner is not None and _owner(p) == owner)
        return siblings, len(pods), name != own, name

    return min(fits, key=load), ""
