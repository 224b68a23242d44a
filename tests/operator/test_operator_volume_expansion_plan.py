"""The expansion plan of one claim, read from the claim as the resizer and the kubelet leave it: grow it when
its request is below the target and its StorageClass allows expansion, report it when the class does not,
and otherwise follow the resize protocol's phases to Expanded or Failed."""

from __future__ import annotations

import pytest
from bookie_operator.decisions.expansion import (
    ClaimAction,
    ExpansionPhase,
    ObservedClaim,
    plan_claim,
    quantity_bytes,
)


def observed(request: str = "300Mi", capacity: str | None = "300Mi", allows: bool | None = True,
             resize_status: str | None = None, errors: tuple[str, ...] = ()) -> ObservedClaim:
    return ObservedClaim(name="ledgers-0-bk-0", ordinal=0, request=request, capacity=capacity,
                         storage_class="standard-xfs", class_allows_expansion=allows, resize_status=resize_status,
                         errors=errors)


@pytest.mark.parametrize(("text", "value"), [("600Mi", 600 * 2**20), ("1Gi", 2**30), ("1.5Gi", 3 * 2**29),
                                             ("2G", 2 * 10**9), ("1073741824", 2**30), ("0.5k", 500),
                                             (None, None), ("ten", None)])
def test_quantities_in_bytes(text: str | None, value: int | None) -> None:
    assert quantity_bytes(text) == value


def test_a_claim_below_the_target_is_patched() -> None:
    plan = plan_claim(observed(), "600Mi")
    assert (plan.action, plan.phase, plan.message) == (ClaimAction.PATCH, ExpansionPhase.REQUESTED,
                                                        "300Mi -> 600Mi")


def test_a_claim_at_or_above_the_target_is_expanded_whatever_the_units() -> None:
    for capacity in ("600Mi", "629145600", "1Gi"):
        plan = plan_claim(observed(request="600Mi", capacity=capacity), "0.5859375Gi")
        assert (plan.action, plan.phase) == (ClaimAction.NONE, ExpansionPhase.EXPANDED)


def test_a_class_without_expansion_is_reported_and_never_patched() -> None:
    plan = plan_claim(observed(allows=False), "600Mi")
    assert (plan.action, plan.phase) == (ClaimAction.REFUSED, ExpansionPhase.NOT_EXPANDABLE)
    assert "StorageClass standard-xfs does not allow volume expansion" in plan.message
    gone = plan_claim(observed(allows=None), "600Mi")
    assert gone.action is ClaimAction.REFUSED and "not found" in gone.message


@pytest.mark.parametrize(("status", "phase"), [
    (None, ExpansionPhase.REQUESTED),
    ("ControllerResizeInProgress", ExpansionPhase.CONTROLLER_RESIZING),
    ("NodeResizePending", ExpansionPhase.FILE_SYSTEM_RESIZE_PENDING),
    ("NodeResizeInProgress", ExpansionPhase.NODE_RESIZING),
    ("NodeResizeInfeasible", ExpansionPhase.FAILED),
])
def test_a_patched_claim_follows_the_resize_protocol(status: str | None, phase: ExpansionPhase) -> None:
    plan = plan_claim(observed(request="600Mi", resize_status=status), "600Mi")
    assert (plan.action, plan.phase) == (ClaimAction.NONE, phase)


def test_a_resize_error_fails_the_claim_with_its_message() -> None:
    plan = plan_claim(observed(request="600Mi", resize_status="ControllerResizeInProgress",
                               errors=("ControllerResizeError: quota exceeded",)), "600Mi")
    assert (plan.phase, plan.message) == (ExpansionPhase.FAILED, "ControllerResizeError: quota exceeded")
