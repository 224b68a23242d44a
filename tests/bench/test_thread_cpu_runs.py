"""The per-thread CPU bench (bench/thread_cpu.py) runs on a tiny load against one bookie of each implementation;
rates are not checked, but the threads it names are: our event loop and journal writer, Apache BookKeeper's
journal and Netty I/O threads, the loops with CPU spent on the adds, and a ceiling predicted for every core
count."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "thread_cpu.py"


def test_thread_cpu_quick_run_names_the_busy_threads_of_both_bookies() -> None:
    result = run_bench(BENCH, "--quick", timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    models = json.loads(result.stdout.strip().splitlines()[-1])["models"]
    for impl, loop, journal in (("ours", "event loop", "journal"), ("java", "bookie-io", "BookieJournal")):
        groups = models[impl]["groups"]
        assert journal in groups, (impl, sorted(groups))
        assert groups.get(loop, {}).get("us_per_add", 0) > 0, (impl, sorted(groups))
        assert set(models[impl]["predicted_adds_per_s"]) == {"4", "8", "16"}
        assert all(v > 0 for v in models[impl]["predicted_adds_per_s"].values())
