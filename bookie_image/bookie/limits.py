"""Counting and logging of hit limits: each hit increments a metric, and is logged at most once per interval.

A flood of refused requests or closed connections must not become a flood of log lines: the first hit of a
limit in an interval is logged with what was hit, the next log line says how many more there were since.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

LOG_INTERVAL_S = 10.0


@dataclass
class LimitHits:
    """Per-limit hit counters (exported as ``bookie_limit_<name>_hits``) with rate-limited logging."""

    interval_s: float = LOG_INTERVAL_S
    counts: dict[str, int] = field(default_factory=dict)
    _logged_at: dict[str, float] = field(default_factory=dict)
    _unlogged: dict[str, int] = field(default_factory=dict)

    def hit(self, limit: str, detail: str) -> None:
        self.counts[limit] = self.counts.get(limit, 0) + 1
        now = time.monotonic()
        if now - self._logged_at.get(limit, -self.interval_s) < self.interval_s:
            self._unlogged[limit] = self._unlogged.get(limit, 0) + 1
            return
        more = self._unlogged.pop(limit, 0)
        self._logged_at[limit] = now
        suffix = f" ({more} more hits since the last report)" if more else ""
        log.warning("limit %s hit: %s%s", limit, detail, suffix)

    def metrics(self) -> dict[str, float]:
        return {f"limit_{name}_hits": float(n) for name, n in self.counts.items()}
