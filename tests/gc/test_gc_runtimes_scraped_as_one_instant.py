"""A scrape shows each GC run time in both its forms as of one instant: the ``_SECONDS`` counter and the
summary's sum in ms agree even while the GC's threads record new events (the extractor records whenever a
rotated entry log is read, not only during a forced cycle)."""

from __future__ import annotations

import threading
import time

from bookie.gc.runtimes import RUNTIMES, Runtimes


def _agree(seconds: dict[str, float], stats: dict) -> list[str]:
    """The run times whose two forms disagree (the summary's both outcomes: the counter counts failures too)."""
    return [name for name in RUNTIMES
            if abs((stats[name].ok.sum + stats[name].failed.sum) - seconds[f"{name}_SECONDS"] * 1000) > 1e-6]


def test_a_snapshot_is_not_changed_by_later_events() -> None:
    runtimes = Runtimes({})
    runtimes.record("EXTRACT_META_RUNTIME", time.monotonic() - 0.002)
    seconds, stats = runtimes.snapshot()
    runtimes.record("EXTRACT_META_RUNTIME", time.monotonic() - 0.003, success=False)
    assert stats["EXTRACT_META_RUNTIME"].ok.count == 1 and stats["EXTRACT_META_RUNTIME"].failed.count == 0
    assert sum(stats["EXTRACT_META_RUNTIME"].ok.current) == 1
    assert _agree(seconds, stats) == []
    assert runtimes.stats["EXTRACT_META_RUNTIME"].failed.count == 1  # the live summary did record it


def test_snapshots_taken_while_another_thread_records_always_agree() -> None:
    runtimes = Runtimes({})
    stop = threading.Event()

    def record() -> None:
        while not stop.is_set():
            for name in RUNTIMES:
                runtimes.record(name, time.monotonic() - 0.001)

    recorder = threading.Thread(target=record)
    recorder.start()
    try:
        disagreeing = [_agree(*runtimes.snapshot()) for _ in range(2000)]
    finally:
        stop.set()
        recorder.join()
    assert not any(disagreeing)
    assert runtimes.stats["THREAD_RUNTIME"].ok.count > 0
