"""GC's run times, in the two forms a bookie exports: seconds per phase as counters (ours,
``bookie_<NAME>_SECONDS``) and Apache BookKeeper's summaries in ms with one event per cycle or phase
(``bookie_<NAME>``: ``THREAD_RUNTIME`` since 4.17; ``GC_LEDGER_RUNTIME``, ``COMPACT_RUNTIME`` and
``EXTRACT_META_RUNTIME`` since 4.18, whose ``GarbageCollectorStats`` defines them). docs/monitoring.md.
"""

from __future__ import annotations

import threading
import time

from bookie.stats import OpStat

RUNTIMES = ("THREAD_RUNTIME", "GC_LEDGER_RUNTIME", "COMPACT_RUNTIME", "EXTRACT_META_RUNTIME")


class Runtimes:
    """Both forms of each run time, recorded together from the GC thread, the extractor's and the event loop."""

    def __init__(self, counters: dict[str, float]) -> None:
        self.counters = counters
        self.stats = {name: OpStat() for name in RUNTIMES}
        self._lock = threading.Lock()  # recorded from three threads; an OpStat is not thread-safe
        for name in RUNTIMES:
            counters.setdefault(f"{name}_SECONDS", 0.0)

    def record(self, name: str, started: float, success: bool = True) -> None:
        """The time since ``started`` (``time.monotonic()``), for ``name`` of ``RUNTIMES``."""
        elapsed = time.monotonic() - started
        with self._lock:
            self.counters[f"{name}_SECONDS"] += elapsed
            self.stats[name].record(elapsed * 1000.0, success)

    def snapshot(self) -> tuple[dict[str, float], dict[str, OpStat]]:
        """Both forms as of one instant: the ``_SECONDS`` counters and copies of the summaries, taken together
        so a scrape never shows an event in one form and not yet in the other."""
        with self._lock:
            seconds = {f"{name}_SECONDS": self.counters[f"{name}_SECONDS"] for name in RUNTIMES}
            return seconds, {name: stat.copy() for name, stat in self.stats.items()}

    def rotate(self) -> None:
        """The summaries' quantile window (``bookie.metrics.rollover_forever``)."""
        with self._lock:
            for stat in self.stats.values():
                stat.rotate()
