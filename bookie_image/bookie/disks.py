"""Disk usage of the bookie's directories (``LedgerDirsMonitor``): measured in a thread, cached for readers."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from bookie.state import DiskUsage


def measure(dirs: Sequence[Path]) -> list[DiskUsage]:
    """Usage of each directory's file system (blocking: call from a thread)."""
    usages = []
    for d in dirs:
        st = os.statvfs(d)
        total = st.f_blocks * st.f_frsize
        free = st.f_bavail * st.f_frsize
        used = 1.0 - (st.f_bavail / st.f_blocks) if st.f_blocks else 1.0
        usages.append(DiskUsage(str(d), used, free, total))
    return usages


def with_pending(usage: DiskUsage, pending: int) -> DiskUsage:
    """``usage`` as it will be once ``pending`` more bytes are written."""
    if not pending or not usage.total_bytes:
        return usage
    free = max(0, usage.free_bytes - pending)
    return DiskUsage(usage.path, 1.0 - free / usage.total_bytes, free, usage.total_bytes)


def totals(usages: Sequence[DiskUsage]) -> tuple[int, int]:
    """(free, total) bytes over distinct file systems (two dirs on one disk count once)."""
    seen: dict[int, tuple[int, int]] = {}
    for u in usages:
        try:
            dev = os.stat(u.path).st_dev
        except OSError:
            continue
        seen[dev] = (u.free_bytes, u.total_bytes)
    return sum(f for f, _ in seen.values()), sum(t for _, t in seen.values())
