"""Pure GC decisions (no I/O): which compaction runs, which logs it takes, window and disk pressure."""

from __future__ import annotations

from datetime import time as dtime

import pytest
from bookie.gc import policy as pol
from bookie.windows import parse_window

HOUR = 3600.0


def settings(**changes: object) -> pol.CompactionSettings:
    base: dict[str, object] = dict(
        minor_threshold=0.2, minor_interval_s=HOUR, minor_max_time_ms=-1, major_threshold=0.8,
        major_interval_s=24 * HOUR, major_max_time_ms=-1, force_allow_compaction=True,
        force_gc_allow_when_no_space=True, disk_full=0.95, disk_warn=0.90, pressure_ratio=0.85, window=None)
    base.update(changes)
    return pol.CompactionSettings(**base)  # type: ignore[arg-type]


def request(now: float = 10 * 24 * HOUR, *, last_major: float | None = None, last_minor: float | None = None,
            force: bool = False, suspend_major: bool = False, suspend_minor: bool = False,
            at: dtime = dtime(12, 0), ignore_window: bool = False) -> pol.CompactionRequest:
    return pol.CompactionRequest(now, at, now if last_major is None else last_major,
                                 now if last_minor is None else last_minor, force, suspend_major, suspend_minor,
                                 ignore_window)


def test_nothing_due_nothing_runs() -> None:
    assert pol.choose_compaction(request(), settings()).kind is pol.Compaction.NONE


def test_major_when_its_interval_elapsed_else_minor() -> None:
    now = 10 * 24 * HOUR
    decision = pol.choose_compaction(request(now, last_major=now - 25 * HOUR), settings())
    assert (decision.kind, decision.threshold) == (pol.Compaction.MAJOR, 0.8)
    decision = pol.choose_compaction(request(now, last_minor=now - 2 * HOUR), settings())
    assert (decision.kind, decision.threshold) == (pol.Compaction.MINOR, 0.2)


def test_forced_gc_runs_major_unless_major_is_suspended() -> None:
    assert pol.choose_compaction(request(force=True), settings()).kind is pol.Compaction.MAJOR
    forced_minor = pol.choose_compaction(request(force=True, suspend_major=True), settings())
    assert forced_minor.kind is pol.Compaction.MINOR
    assert pol.choose_compaction(request(force=True, suspend_major=True, suspend_minor=True),
                                 settings()).kind is pol.Compaction.NONE


def test_force_allow_compaction_unlocks_disabled_compaction_only_when_forced() -> None:
    disabled = settings(major_interval_s=0, minor_interval_s=0)
    assert pol.choose_compaction(request(last_major=0, last_minor=0), disabled).kind is pol.Compaction.NONE
    assert pol.choose_compaction(request(force=True), disabled).kind is pol.Compaction.MAJOR
    no_force = settings(major_interval_s=0, minor_interval_s=0, force_allow_compaction=False)
    assert pol.choose_compaction(request(force=True), no_force).kind is pol.Compaction.NONE


def test_major_waits_for_its_window_but_disk_pressure_overrides_it() -> None:
    s = settings(window=parse_window("01:00-05:00"))
    now = 10 * 24 * HOUR
    due = now - 25 * HOUR
    outside = pol.choose_compaction(request(now, at=dtime(12, 0), last_major=due), s)
    assert outside.kind is pol.Compaction.NONE and "window" in outside.reason
    assert pol.choose_compaction(request(now, at=dtime(3, 30), last_major=due), s).kind is pol.Compaction.MAJOR
    pressed = pol.choose_compaction(request(now, at=dtime(12, 0), ignore_window=True), s)
    assert pressed.kind is pol.Compaction.MAJOR, "over the pressure ratio: now, not even due"
    assert pol.choose_compaction(request(now, at=dtime(12, 0), force=True), s).kind is pol.Compaction.MAJOR


def test_window_may_wrap_midnight_and_bad_windows_are_refused() -> None:
    w = parse_window("22:00-04:00")
    assert w is not None and w.contains(dtime(23, 0)) and w.contains(dtime(3, 59)) and not w.contains(dtime(4, 0))
    assert parse_window("") is None
    for bad in ("4", "25:00-01:00", "01:00-01:00", "1-2"):
        with pytest.raises(ValueError):
            parse_window(bad)


def test_disk_pressure_as_bookkeeper_listener_plus_rocketmq_ratio() -> None:
    forcing = settings()
    assert pol.disk_pressure(0.5, forcing) == pol.DiskPressure(False, False, False, False)
    assert pol.disk_pressure(0.86, forcing).ignore_window
    assert pol.disk_pressure(0.96, forcing).force, "isForceGCAllowWhenNoSpace: a full disk forces GC"
    strict = settings(force_gc_allow_when_no_space=False)
    almost = pol.disk_pressure(0.92, strict)
    assert almost.suspend_major and not almost.suspend_minor and not almost.force
    full = pol.disk_pressure(0.97, strict)
    assert full.suspend_major and full.suspend_minor


def test_selection_lowest_usage_first_under_threshold_only() -> None:
    logs = [pol.LogUsage(1, 100, 50), pol.LogUsage(2, 100, 5), pol.LogUsage(3, 100, 90),
            pol.LogUsage(4, 100, 0), pol.LogUsage(5, 100, 10, eligible=False), pol.LogUsage(6, 100, 15)]
    chosen = pol.select_for_compaction(logs, 0.6)
    assert [u.log_id for u in chosen] == [2, 6, 1], "dead (4), ineligible (5) and dense (3) logs are not taken"


def test_usage_against_target_size_and_buckets() -> None:
    small = pol.LogUsage(1, 100, 50)
    assert small.usage() == 0.5 and small.usage(target_size=1000) == 0.05
    buckets = pol.usage_buckets([pol.LogUsage(1, 100, 5), pol.LogUsage(2, 100, 55), pol.LogUsage(3, 100, 100)])
    assert buckets == [1, 0, 0, 0, 0, 1, 0, 0, 0, 1]


def test_compaction_needs_room_for_the_live_bytes() -> None:
    assert pol.free_space_allows(10, 100, 50) and not pol.free_space_allows(60, 100, 50)
