"""Each bookie's rack, for BookKeeper's rack-aware placement, from the node its pod runs on.

The rack is ``/<region>/<zone>`` from the node's ``topology.kubernetes.io/region`` and
``topology.kubernetes.io/zone`` labels (``/<zone>`` without a region), the two-level form that BookKeeper's
``RegionAwareEnsemblePlacementPolicy`` reads and that its ``RackawareEnsemblePlacementPolicy`` takes as one
rack per zone. A node without a zone label gives no rack (the placement's default rack). A bookie whose pod
is away for a moment (a restart, a reschedule not yet bound) keeps the rack it had, so that the published
information does not flap.
"""

from __future__ import annotations

from collections.abc import Mapping

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"


def rack_of_node(labels: Mapping[str, str]) -> str | None:
    zone = labels.get(ZONE_LABEL, "").strip("/ ")
    if not zone:
        return None
    region = labels.get(REGION_LABEL, "").strip("/ ")
    return f"/{region}/{zone}" if region else f"/{zone}"


def bookie_racks(ordinals: list[int], node_of: Mapping[int, str], node_labels: Mapping[str, Mapping[str, str]],
                 previous: Mapping[int, str]) -> dict[int, str]:
    """ordinal -> rack for the bookies that should exist: from their node, else what they had."""
    out = {}
    for ordinal in ordinals:
        node = node_of.get(ordinal)
        rack = rack_of_node(node_labels.get(node, {})) if node is not None and node in node_labels \
            else previous.get(ordinal)
        if rack is not None:
            out[ordinal] = rack
    return out
