"""Pure GC decisions: which compaction runs now, which entry logs it takes, what disk pressure means.

No I/O and no clock reads here (callers pass ``now``), so every rule is specified by unit tests
(tests/gc/test_policy.py). The rules are BookKeeper's ``GarbageCollectorThread`` ones plus two ideas from
RocketMQ's cleanup service: major compaction only inside a time window (like ``deleteWhen=04``), and a
disk-pressure ratio above which compaction runs at once whatever the window (``diskSpaceCleanForciblyRatio``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import time as dtime

from bookie.windows import TimeWindow

USAGE_BUCKETS = 10  # BookKeeper's entry_log_usage_buckets_le_10 .. le_100


class Compaction(enum.Enum):
    NONE = "none"
    MAJOR = "major"
    MINOR = "minor"


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """The compaction keys of BookieConfig, in the units the rules use (seconds for intervals)."""

    minor_threshold: float
    minor_interval_s: float
    minor_max_time_ms: int
    major_threshold: float
    major_interval_s: float
    major_max_time_ms: int
    force_allow_compaction: bool
    force_gc_allow_when_no_space: bool
    disk_full: float          # diskUsageThreshold
    disk_warn: float          # diskUsageWarnThreshold
    pressure_ratio: float     # gcDiskPressureRatio: compact now, window ignored (0 = off)
    window: TimeWindow | None  # majorCompactionWindow (None = any time)

    @property
    def minor_enabled(self) -> bool:
        return self.minor_interval_s > 0 and self.minor_threshold > 0

    @property
    def major_enabled(self) -> bool:
        return self.major_interval_s > 0 and self.major_threshold > 0

    @property
    def force_minor_allowed(self) -> bool:
        # BookKeeper: forceAllowCompaction only unlocks a compaction whose threshold is in (0, 1).
        return self.force_allow_compaction and 0 < self.minor_threshold < 1

    @property
    def force_major_allowed(self) -> bool:
        return self.force_allow_compaction and 0 < self.major_threshold < 1


@dataclass(frozen=True, slots=True)
class DiskPressure:
    """What the fullest ledger disk means for GC this cycle."""

    force: bool           # compact even if not due (isForceGCAllowWhenNoSpace on a full/almost full disk)
    suspend_major: bool   # BookKeeper's disk listener: almost full suspends major compaction
    suspend_minor: bool   # full suspends minor too
    ignore_window: bool   # over gcDiskPressureRatio: major compaction now, window or not


def disk_pressure(used_fraction: float, s: CompactionSettings) -> DiskPressure:
    """BookKeeper's ledger-dirs listener (diskAlmostFull / diskFull) plus RocketMQ's forcible-clean ratio."""
    full = used_fraction > s.disk_full
    warn = used_fraction > s.disk_warn
    pressure = s.pressure_ratio > 0 and used_fraction >= s.pressure_ratio
    if s.force_gc_allow_when_no_space and (full or warn):
        return DiskPressure(force=True, suspend_major=False, suspend_minor=False, ignore_window=True)
    return DiskPressure(force=False, suspend_major=warn or full, suspend_minor=full,
                        ignore_window=pressure)


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """The inputs of one decision (state of one ledger directory at ``now``). ``now_s`` and the ``last_*_s``
    are read on one clock, the bookie's monotonic one: intervals are time that passed, whatever the wall clock
    did meanwhile; ``local_time`` (the major window) is the wall clock's time of day."""

    now_s: float
    local_time: dtime
    last_major_s: float
    last_minor_s: float
    force: bool               # a forced GC (REST) or disk pressure with isForceGCAllowWhenNoSpace
    suspend_major: bool       # REST suspension, the forced request's forceMajor=false, or disk listener
    suspend_minor: bool
    ignore_window: bool = False  # disk over gcDiskPressureRatio


@dataclass(frozen=True, slots=True)
class CompactionDecision:
    kind: Compaction
    threshold: float = 0.0
    max_time_ms: int = -1
    reason: str = ""


def choose_compaction(r: CompactionRequest, s: CompactionSettings) -> CompactionDecision:
    """Major first, else minor, as ``GarbageCollectorThread.runWithFlags``; plus the major window."""
    major_due = s.major_enabled and (r.now_s - r.last_major_s > s.major_interval_s or r.ignore_window)
    in_window = s.window is None or s.window.contains(r.local_time) or r.ignore_window
    if not r.suspend_major and ((s.force_major_allowed and r.force)
                                or (s.major_enabled and r.force) or (major_due and in_window)):
        why = "forced" if r.force else ("disk pressure" if r.ignore_window else "interval elapsed")
        return CompactionDecision(Compaction.MAJOR, s.major_threshold, s.major_max_time_ms, why)
    minor_due = s.minor_enabled and r.now_s - r.last_minor_s > s.minor_interval_s
    if not r.suspend_minor and ((s.force_minor_allowed and r.force) or (s.minor_enabled and r.force) or minor_due):
        why = "forced" if r.force else "interval elapsed"
        return CompactionDecision(Compaction.MINOR, s.minor_threshold, s.minor_max_time_ms, why)
    if major_due and not in_window and not r.suspend_major:
        return CompactionDecision(Compaction.NONE, reason="major compaction due, outside its window")
    return CompactionDecision(Compaction.NONE)


@dataclass(frozen=True, slots=True)
class LogUsage:
    """What the selection needs to know about one entry log."""

    log_id: int
    total_bytes: int
    remaining_bytes: int
    eligible: bool = True   # False: active, quarantined, pending deletion

    def usage(self, target_size: int = 0) -> float:
        """remaining/total; against max(total, logSizeLimit) when useTargetEntryLogSizeForGc."""
        denominator = max(self.total_bytes, target_size)
        return self.remaining_bytes / denominator if denominator > 0 else 0.0


def select_for_compaction(logs: Iterable[LogUsage], threshold: float, target_size: int = 0) -> list[LogUsage]:
    """Logs under ``threshold`` usage, emptiest first (BookKeeper's buckets; Kafka's dirtiest-log-first).

    Fully dead logs (remaining 0) are left to entry-log GC, which deletes them without rewriting anything.
    """
    chosen = [u for u in logs if u.eligible and u.remaining_bytes > 0 and u.usage(target_size) < threshold]
    return sorted(chosen, key=lambda u: (u.usage(target_size), u.log_id))


def usage_buckets(logs: Sequence[LogUsage], target_size: int = 0) -> list[int]:
    """Counts per usage decile, as BookKeeper's ``calculateUsageIndex``: index i is [i*10 %, (i+1)*10 %),
    the last one also takes 100 % (exported as entry_log_usage_buckets_le_{10..100})."""
    buckets = [0] * USAGE_BUCKETS
    for u in logs:
        index = min(USAGE_BUCKETS - 1, int(u.usage(target_size) * USAGE_BUCKETS))
        buckets[index] += 1
    return buckets


def free_space_allows(live_bytes: int, free_bytes: int, reserve_bytes: int) -> bool:
    """Compacting a log first writes its live bytes elsewhere: only when they fit with a reserve left."""
    return live_bytes + reserve_bytes <= free_bytes
