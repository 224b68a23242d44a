"""Reference-counted entry-log files (RocketMQ's ``ReferenceResource``), for deletions GC decides.

A log GC wants gone is first made unavailable (``retire``); it is unlinked only when nobody reads it:
no in-process holder (``hold``/``release``: compaction scans, the explain endpoint) and no open file
description holding a shared ``flock`` on the file (``bookie.storage.log_files``: the admin API's entry-log
reads, ``bookie entrylog dump``, a backup). After ``forced_destroy_s`` it is unlinked anyway (RocketMQ's
``destroyMapedFileIntervalForcibly``): an open file descriptor keeps working after unlink on POSIX, so a slow
reader delays reclamation but can not block it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

# The locks of readers outside GC are taken through storage's entry-log files API; re-exported for them.
from bookie.storage.log_files import held_by_other_process, shared_hold

__all__ = ["Destroy", "LogRefs", "held_by_other_process", "shared_hold"]


class Destroy(Enum):
    DELETED = "deleted"
    FORCED = "forced"      # still held when the forced-destroy interval ran out
    HELD = "held"          # kept for now
    GONE = "gone"          # the file had already disappeared


@dataclass
class _Retired:
    since: float
    path: Path


class LogRefs:
    """Holders per log id of one ledger directory, and the logs waiting to be destroyed."""

    def __init__(self, forced_destroy_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.forced_destroy_s = forced_destroy_s
        self._clock = clock
        self._lock = threading.Lock()
        self._holders: dict[int, int] = {}
        self._retired: dict[int, _Retired] = {}

    def hold(self, log_id: int) -> bool:
        """Take a reference; refused once the log is retired (RocketMQ: ``hold`` fails when unavailable)."""
        with self._lock:
            if log_id in self._retired:
                return False
            self._holders[log_id] = self._holders.get(log_id, 0) + 1
            return True

    def release(self, log_id: int) -> None:
        with self._lock:
            count = self._holders.get(log_id, 0) - 1
            if count > 0:
                self._holders[log_id] = count
            else:
                self._holders.pop(log_id, None)

    @contextlib.contextmanager
    def reading(self, log_id: int) -> Iterator[bool]:
        held = self.hold(log_id)
        try:
            yield held
        finally:
            if held:
                self.release(log_id)

    def retire(self, log_id: int, path: Path) -> None:
        with self._lock:
            self._retired.setdefault(log_id, _Retired(self._clock(), path))

    def retired(self) -> dict[int, float]:
        """Retired log id -> seconds since it was retired (the explain endpoint shows them)."""
        now = self._clock()
        with self._lock:
            return {i: now - r.since for i, r in self._retired.items()}

    def holders(self, log_id: int) -> int:
        with self._lock:
            return self._holders.get(log_id, 0)

    def try_destroy(self, log_id: int, unlink: Callable[[int], object]) -> Destroy:
        """Unlink a retired log if nobody holds it, or if its forced-destroy interval is over."""
        with self._lock:
            retired = self._retired.get(log_id)
            if retired is None:
                return Destroy.GONE
            held = self._holders.get(log_id, 0) > 0
            age = self._clock() - retired.since
        if not retired.path.exists():
            self._forget(log_id)
            return Destroy.GONE
        held = held or held_by_other_process(retired.path)
        if held and age < self.forced_destroy_s:
            return Destroy.HELD
        unlink(log_id)
        self._forget(log_id)
        return Destroy.FORCED if held else Destroy.DELETED

    def _forget(self, log_id: int) -> None:
        with self._lock:
            self._retired.pop(log_id, None)
