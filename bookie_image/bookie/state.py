"""Bookie state: writable or read-only, and why.

The decision of what the disks mean (``decide``) is pure so it can be specified in unit tests; the
``StateManager`` applies decisions by re-registering the bookie in ZooKeeper (``available/`` vs
``available/readonly/``) through a callback, so this module knows nothing about ZooKeeper itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

log = logging.getLogger(__name__)


class ReadOnlyReason(StrEnum):
    NONE = ""
    MANUAL = "manual"          # PUT /api/v1/bookie/state/readonly; undone only manually
    DISK_FULL = "disk-full"    # a ledger directory crossed diskUsageThreshold
    FORCED = "forced"          # forceReadOnlyBookie=true
    JOURNAL_CORRUPT = "journal-corrupt"  # a replay found damaged journal groups; until they are dealt with


# Read-only for reasons the disks can not undo.
_STICKY = (ReadOnlyReason.MANUAL, ReadOnlyReason.FORCED, ReadOnlyReason.JOURNAL_CORRUPT)


@dataclass(frozen=True, slots=True)
class DiskUsage:
    path: str
    used_fraction: float
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True, slots=True)
class DiskThresholds:
    full: float          # diskUsageThreshold
    warn: float          # diskUsageWarnThreshold
    writable_below: float  # diskUsageLwmThreshold (defaults to diskUsageThreshold)
    any_disk_full_is_read_only: bool = True


@dataclass(frozen=True, slots=True)
class DiskVerdict:
    read_only: bool
    full_dirs: tuple[str, ...] = ()
    warn_dirs: tuple[str, ...] = ()


def decide(currently_read_only_for_disk: bool, usages: Sequence[DiskUsage], t: DiskThresholds) -> DiskVerdict:
    """What the disks say the bookie should be, with hysteresis.

    Going read-only: any directory above the full threshold (or all, when any-disk-full is off).
    Coming back: only when the usage over all directories is below the low-water mark, so a bookie
    does not flap around the threshold.
    """
    full = tuple(u.path for u in usages if u.used_fraction > t.full)
    warn = tuple(u.path for u in usages if t.warn < u.used_fraction <= t.full)
    if currently_read_only_for_disk:
        total = sum(u.total_bytes for u in usages) or 1
        used = sum(u.total_bytes - u.free_bytes for u in usages)
        return DiskVerdict(read_only=used / total >= t.writable_below, full_dirs=full, warn_dirs=warn)
    if not usages:
        return DiskVerdict(read_only=False)
    over = bool(full) if t.any_disk_full_is_read_only else len(full) == len(usages)
    return DiskVerdict(read_only=over, full_dirs=full, warn_dirs=warn)


Registrar = Callable[[bool], Awaitable[None]]


@dataclass
class BookieStatus:
    running: bool = False
    shutting_down: bool = False
    read_only: bool = False
    reason: ReadOnlyReason = ReadOnlyReason.NONE
    since: float = field(default_factory=time.time)
    full_dirs: tuple[str, ...] = ()
    warn_dirs: tuple[str, ...] = ()


class StateManager:
    """Owns the bookie's writable/read-only state; every transition is registered in ZooKeeper."""

    def __init__(self, thresholds: DiskThresholds, registrar: Registrar, *, forced_read_only: bool = False,
                 read_only_enabled: bool = True) -> None:
        self._thresholds = thresholds
        self._registrar = registrar
        self._lock = asyncio.Lock()
        self._read_only_enabled = read_only_enabled
        self.forced_read_only = forced_read_only
        self.held: tuple[ReadOnlyReason, str] | None = None
        self.status = BookieStatus()
        self.on_change: list[Callable[[BookieStatus], None]] = []

    @property
    def read_only(self) -> bool:
        return self.status.read_only

    @property
    def available_for_high_priority_writes(self) -> bool:
        """Recovery writes go on while read-only, unless the bookie is read-only because a disk is full."""
        return self.status.reason is not ReadOnlyReason.DISK_FULL

    def hold_read_only(self, reason: ReadOnlyReason, why: str) -> None:
        """Before ``start``: come up read-only for ``reason``, and stay so; ``why`` is what an operator is told
        when asking for writable."""
        self.held = (reason, why)

    async def start(self) -> None:
        """Register for the first time, read-only if forced or held."""
        async with self._lock:
            if self.held is not None:
                ro, reason = True, self.held[0]
            elif self.forced_read_only:
                ro, reason = True, ReadOnlyReason.FORCED
            else:
                ro, reason = False, ReadOnlyReason.NONE
            self.status.read_only, self.status.reason = ro, reason
            await self._registrar(ro)
            self.status.running = True

    async def reregister(self, first_delay_s: float = 0.1, max_delay_s: float = 5.0) -> None:
        """After a ZooKeeper session expiry: register again in the current state, until that succeeds. A failed
        attempt (the connection lost again, ZooKeeper busy) is retried after ``first_delay_s``, doubling up to
        ``max_delay_s``: a bookie that serves but is not registered gets no new ensembles and looks lost to the
        auditor. (Apache BookKeeper's bookie shuts itself down instead; this one stays up and keeps trying.)"""
        delay = first_delay_s
        while True:
            try:
                async with self._lock:
                    await self._registrar(self.status.read_only)
                return
            except Exception as exc:
                log.warning("registering again after the ZooKeeper session expired failed (%s): retrying in "
                            "%.1f s", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_delay_s)

    async def set_manual(self, read_only: bool) -> None:
        """The REST API's switch. Raises ValueError when the configuration forbids it."""
        if self.held is not None:
            if read_only:
                return  # read-only already, for a stronger reason than the switch
            raise ValueError(f"bookie is read-only ({self.held[0].value}): {self.held[1]}")
        if self.forced_read_only and not read_only:
            raise ValueError("bookie is configured with forceReadOnlyBookie=true")
        if read_only and not self._read_only_enabled:
            raise ValueError("read-only mode is disabled (readOnlyModeEnabled=false)")
        reason = ReadOnlyReason.MANUAL if read_only else ReadOnlyReason.NONE
        await self._transition(read_only, reason)

    async def apply_disk_usage(self, usages: Sequence[DiskUsage]) -> DiskVerdict:
        """Feed one disk check. Manual and forced read-only are never undone by the disks."""
        st = self.status
        verdict = decide(st.reason is ReadOnlyReason.DISK_FULL, usages, self._thresholds)
        st.full_dirs, st.warn_dirs = verdict.full_dirs, verdict.warn_dirs
        if st.reason in _STICKY:
            return verdict
        if verdict.read_only and not st.read_only:
            log.warning("ledger directories over diskUsageThreshold %s: going read-only",
                        ", ".join(verdict.full_dirs))
            await self._transition(True, ReadOnlyReason.DISK_FULL)
        elif not verdict.read_only and st.reason is ReadOnlyReason.DISK_FULL:
            log.info("disk usage below the low-water mark: writable again")
            await self._transition(False, ReadOnlyReason.NONE)
        return verdict

    async def mark_disk_full(self, why: str) -> None:
        """The add path found a ledger directory about to fill (before the disk checker's next round)."""
        if self.status.reason in _STICKY or self.status.read_only:
            return
        log.warning("going read-only: %s", why)
        await self._transition(True, ReadOnlyReason.DISK_FULL)

    async def _transition(self, read_only: bool, reason: ReadOnlyReason) -> None:
        async with self._lock:
            changed = read_only != self.status.read_only
            self.status.reason = reason
            if not changed:
                return
            # Serve in the new mode before advertising it, as BookKeeper's state manager does: a client that finds
            # the bookie writable in ZooKeeper is never refused as read-only, and once it is read-only there, no
            # write is taken any more. A registration that fails leaves the mode as it was.
            self.status.read_only = read_only
            try:
                await self._registrar(read_only)
            except BaseException:
                self.status.read_only = not read_only
                raise
            self.status.since = time.time()
        for callback in self.on_change:
            callback(self.status)

    def mark_shutting_down(self) -> None:
        self.status.shutting_down = True
