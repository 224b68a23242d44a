"""Read-only control from disk usage: hwm/lwm hysteresis, and never fewer writable bookies than the ensemble."""

from __future__ import annotations

import datetime as dt

from bookie_operator.decisions import (
    capped_scale_up,
    plan_read_only,
    scale_back_after_pressure,
    scale_up_for_pressure,
    should_force_gc,
)

from tests.operator.helpers import NOW, bookie, gc, spec

POLICY = spec(replicas=4, ensembleSize=2).disk_policy  # hwm 0.85, lwm 0.75, force ratio 0.8


def read_only(plan: object) -> list[int]:
    return sorted(o for o, d in plan.decisions.items() if d.read_only)  # type: ignore[attr-defined]


def test_a_bookie_at_the_high_water_mark_goes_read_only_with_the_reason() -> None:
    plan = plan_read_only([bookie(0, 0.5), bookie(1, 0.86), bookie(2, 0.6)], POLICY, 2, {})
    assert read_only(plan) == [1]
    assert plan.decisions[1].reason == "operator: disk 86% >= high-water mark 85%"
    assert not plan.disk_pressure


def test_between_the_marks_a_bookie_keeps_its_state() -> None:
    was_ro = {1: "operator: disk 86% >= high-water mark 85%"}
    assert read_only(plan_read_only([bookie(0, 0.5), bookie(1, 0.80), bookie(2, 0.5)], POLICY, 2, was_ro)) == [1]
    assert read_only(plan_read_only([bookie(0, 0.5), bookie(1, 0.80), bookie(2, 0.5)], POLICY, 2, {})) == []


def test_below_the_low_water_mark_it_is_writable_again() -> None:
    was_ro = {1: "operator: disk 86% >= high-water mark 85%"}
    assert read_only(plan_read_only([bookie(0, 0.5), bookie(1, 0.74), bookie(2, 0.5)], POLICY, 2, was_ro)) == []


def test_a_read_only_the_bookie_chose_itself_is_overridden_when_the_disk_is_fine() -> None:
    plan = plan_read_only([bookie(0, 0.5, read_only=True), bookie(1, 0.5)], POLICY, 1, {})
    assert plan.decisions[0].read_only is False


def test_never_fewer_writable_than_the_ensemble_size_the_fullest_go_first() -> None:
    bookies = [bookie(0, 0.90), bookie(1, 0.95), bookie(2, 0.88), bookie(3, 0.5)]
    plan = plan_read_only(bookies, POLICY, 2, {})
    assert read_only(plan) == [0, 1]          # the two fullest
    assert plan.held_writable == [2]          # 88% kept writable: bookie 3 alone is not an ensemble
    assert plan.disk_pressure and plan.writable_after == 2


def test_unreachable_bookies_are_neither_changed_nor_counted_as_writable() -> None:
    bookies = [bookie(0, 0.9), bookie(1, 0.5), bookie(2, None, reachable=False)]
    plan = plan_read_only(bookies, POLICY, 2, {})
    assert 2 not in plan.decisions
    assert read_only(plan) == [] and plan.held_writable == [0]


def test_the_bookie_being_decommissioned_is_read_only_whatever_its_disk() -> None:
    plan = plan_read_only([bookie(0, 0.1), bookie(1, 0.1), bookie(2, 0.1)], POLICY, 2, {}, decommissioning=2)
    assert read_only(plan) == [2] and plan.decisions[2].reason == "operator: decommissioning"


def test_disk_pressure_scales_up_only_when_allowed_and_settled() -> None:
    bookies = [bookie(0, 0.9), bookie(1, 0.9)]
    s = spec(replicas=2, ensembleSize=2, diskPolicy={"scaleUp": {"enabled": True, "maxReplicas": 3}})
    plan = plan_read_only(bookies, s.disk_policy, 2, {})
    assert scale_up_for_pressure(s, plan, settled=True) == 1      # status.scaledUpBy, not spec.replicas
    assert scale_up_for_pressure(s, plan, settled=False) is None
    assert scale_up_for_pressure(s, plan, settled=True, scaled_up_by=1) is None      # 2 + 1 = maxReplicas
    assert scale_up_for_pressure(spec(replicas=3, ensembleSize=2, diskPolicy={"scaleUp": {"enabled": True,
                                 "maxReplicas": 3}}), plan, settled=True) is None
    assert scale_up_for_pressure(spec(replicas=2, ensembleSize=2), plan, settled=True) is None


def test_the_added_bookie_goes_once_the_data_fits_on_the_others_below_the_low_water_mark() -> None:
    s = spec(replicas=2, ensembleSize=2, diskPolicy={"scaleUp": {"enabled": True, "maxReplicas": 3}})

    def back(*used: float, by: int = 1, settled: bool = True) -> int | None:
        bookies = [bookie(i, u) for i, u in enumerate(used)]
        plan = plan_read_only(bookies, s.disk_policy, 2, {})
        return scale_back_after_pressure(s, bookies, plan, settled, by)

    assert back(0.3, 0.3, 0.1) == 0             # 70 GiB used fits on two 100 GiB bookies below 75%
    assert back(0.6, 0.6, 0.3) is None          # 150 GiB would fill the two others to 75%: pressure again
    assert back(0.9, 0.3, 0.1) is None          # a bookie is read-only for disk usage
    assert back(0.3, 0.3, 0.1, by=0) is None    # nothing was added
    assert back(0.3, 0.3, 0.1, settled=False) is None
    unknown = [bookie(0, 0.3), bookie(1, 0.3), bookie(2, None, reachable=False)]
    assert scale_back_after_pressure(s, unknown, plan_read_only(unknown, s.disk_policy, 2, {}), True, 1) is None


def test_the_operators_bookies_never_go_beyond_max_replicas() -> None:
    s = spec(replicas=3, ensembleSize=2, diskPolicy={"scaleUp": {"enabled": True, "maxReplicas": 3}})
    assert capped_scale_up(s, 1) == 0           # the user raised spec.replicas to cover the added bookie
    assert capped_scale_up(spec(replicas=2, ensembleSize=2, diskPolicy={"scaleUp": {"maxReplicas": 4}}), 1) == 1


def test_forced_gc_above_the_ratio_not_while_running_and_not_too_often() -> None:
    full = bookie(0, 0.81, gc=gc())
    assert should_force_gc(full, POLICY, None, NOW)
    assert not should_force_gc(bookie(0, 0.79, gc=gc()), POLICY, None, NOW)
    assert not should_force_gc(bookie(0, 0.81, gc=gc(running=True)), POLICY, None, NOW)
    assert not should_force_gc(full, POLICY, NOW - dt.timedelta(minutes=5), NOW)
    assert should_force_gc(full, POLICY, NOW - dt.timedelta(minutes=11), NOW)
