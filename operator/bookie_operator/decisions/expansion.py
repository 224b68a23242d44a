"""Online volume expansion: which claims to grow, and where each one is in the resize protocol.

A StatefulSet's volumeClaimTemplates cannot change, so a larger ``spec.storage.<kind>.size`` reaches the
existing claims only by patching each one (as Strimzi and CloudNativePG do); the StatefulSet itself is
re-created with orphan propagation by the apply step, so new bookies get the new size. Each claim then goes
through the Kubernetes resize protocol, read from the claim's status as the resizer and the kubelet write it:

    request < target                   -> ``Patch`` (phase Requested), unless its StorageClass cannot expand
    capacity >= target                 -> Expanded
    ControllerResizeInProgress         -> ControllerResizing       (the CSI resizer grows the device)
    NodeResizePending                  -> FileSystemResizePending  (the kubelet grows the filesystem online
                                                                    while the bookie pod runs)
    NodeResizeInProgress               -> NodeResizing
    condition ControllerResizeError / NodeResizeError, or *Infeasible -> Failed (the message says why)

Shrinking is refused before it gets here, by the CRD's CEL transition rule on ``size``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_FACTOR = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
           "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity_bytes(text: str | None) -> int | None:
    """A storage quantity in bytes (rounded up), or None when absent or not a plain quantity."""
    match = _QUANTITY.match(str(text or "").strip())
    if not match:
        return None
    try:
        value = Decimal(match.group(1)) * _FACTOR[match.group(2)]
    except InvalidOperation:
        return None
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


class ClaimAction(enum.Enum):
    NONE = "none"            # nothing to write: expanded, or the resize is on its way
    PATCH = "patch"          # set the claim's request to the target size
    REFUSED = "refused"      # the StorageClass does not allow expansion (or is gone): report, never patch


class ExpansionPhase(enum.Enum):
    REQUESTED = "Requested"
    CONTROLLER_RESIZING = "ControllerResizing"
    FILE_SYSTEM_RESIZE_PENDING = "FileSystemResizePending"
    NODE_RESIZING = "NodeResizing"
    EXPANDED = "Expanded"
    FAILED = "Failed"
    NOT_EXPANDABLE = "NotExpandable"


@dataclass(frozen=True)
class ObservedClaim:
    name: str
    ordinal: int
    request: str                          # spec.resources.requests.storage
    capacity: str | None                  # status.capacity.storage
    storage_class: str | None
    class_allows_expansion: bool | None   # None: the StorageClass does not exist
    resize_status: str | None = None      # status.allocatedResourceStatuses.storage
    errors: tuple[str, ...] = ()          # messages of ControllerResizeError / NodeResizeError conditions


@dataclass(frozen=True)
class ClaimPlan:
    claim: str
    ordinal: int
    target: str
    action: ClaimAction
    phase: ExpansionPhase
    message: str = ""


def plan_claim(c: ObservedClaim, target: str) -> ClaimPlan:
    want = quantity_bytes(target) or 0
    have = quantity_bytes(c.capacity) or 0
    asked = quantity_bytes(c.request) or 0

    def plan(action: ClaimAction, phase: ExpansionPhase, message: str = "") -> ClaimPlan:
        return ClaimPlan(c.name, c.ordinal, target, action, phase, message)

    if have >= want:
        return plan(ClaimAction.NONE, ExpansionPhase.EXPANDED, f"{c.capacity}")
    if asked < want:
        if c.class_allows_expansion is None:
            return plan(ClaimAction.REFUSED, ExpansionPhase.NOT_EXPANDABLE,
                        f"StorageClass {c.storage_class or '(none)'} of claim {c.name} not found: cannot expand "
                        f"it from {c.request} to {target}")
        if not c.class_allows_expansion:
            return plan(ClaimAction.REFUSED, ExpansionPhase.NOT_EXPANDABLE,
                        f"StorageClass {c.storage_class} does not allow volume expansion (allowVolumeExpansion is "
                        f"not true): claim {c.name} stays {c.request}, not {target}; use a class that allows it, "
                        f"or migrate to a new BookieCluster")
        return plan(ClaimAction.PATCH, ExpansionPhase.REQUESTED, f"{c.request} -> {target}")
    if c.errors or (c.resize_status or "").endswith("Infeasible"):
        return plan(ClaimAction.NONE, ExpansionPhase.FAILED, "; ".join(c.errors) or str(c.resize_status))
    phase = {
        "ControllerResizeInProgress": ExpansionPhase.CONTROLLER_RESIZING,
        "NodeResizePending": ExpansionPhase.FILE_SYSTEM_RESIZE_PENDING,
        "NodeResizeInProgress": ExpansionPhase.NODE_RESIZING,
    }.get(c.resize_status or "", ExpansionPhase.REQUESTED)
    return plan(ClaimAction.NONE, phase, f"{c.capacity or '?'} -> {target}")


def plan_expansion(claims: list[tuple[ObservedClaim, str]]) -> list[ClaimPlan]:
    """One plan per (claim, target size), in the given order."""
    return [plan_claim(c, target) for c, target in claims]
