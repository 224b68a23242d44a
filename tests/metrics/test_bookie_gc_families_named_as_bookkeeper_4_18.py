"""Apache BookKeeper 4.18 defines GC stats that 4.17 has not (``GarbageCollectorStats``): ours serves every
one of them under the same name and type, the per-phase run-time summaries with an event per GC phase.

The names are read from 4.18.0's own class file (the compatibility matrix's other version,
``$BOOKIE_FLEET_BK_COMPAT_LIB``) with ``javap``, so a rename there shows here.
"""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import aiohttp

from tests.gc.gcutil import GC_OVERRIDES, client, gc_now, write_ledger
from tests.support.bookies import BookieFactory

STATS_CLASS = "org.apache.bookkeeper.bookie.stats.GarbageCollectorStats"
# The stats a 4.17 bookie already exports (docs/monitoring.md's BookKeeper table): not new in 4.18.
IN_4_17 = {"MINOR_COMPACTION_TOTAL", "MAJOR_COMPACTION_TOTAL", "ENTRY_LOCATION_COMPACTION_TOTAL",
           "RECLAIMED_COMPACTION_SPACE_BYTES", "RECLAIMED_DELETION_SPACE_BYTES", "RECLAIM_FAILED_TO_DELETE",
           "THREAD_RUNTIME", "DELETED_LEDGER_TOTAL", "ACTIVE_ENTRY_LOG_TOTAL", "ACTIVE_ENTRY_LOG_SPACE_BYTES",
           "ACTIVE_LEDGER_TOTAL"}
# One event per GC cycle (THREAD_RUNTIME) or phase, in ms, as 4.18's GarbageCollectorThread records them.
RUNTIMES = {"THREAD_RUNTIME", "GC_LEDGER_RUNTIME", "COMPACT_RUNTIME", "EXTRACT_META_RUNTIME"}


def bookkeeper_418_gc_stats() -> dict[str, str]:
    """name -> Prometheus type of the stats GarbageCollectorStats registers, from its bytecode: the String
    constants passed to getCounter / getOpStatsLogger / registerGauge, and the usage-bucket gauges' pattern."""
    lib = Path(os.environ["BOOKIE_FLEET_BK_COMPAT_LIB"])
    (jar,) = lib.glob("bookkeeper-server-4.18.*.jar")
    assert STATS_CLASS.replace(".", "/") + ".class" in zipfile.ZipFile(jar).namelist()
    code = subprocess.run(["javap", "-c", "-v", "-p", "-cp", str(jar), STATS_CLASS], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    kinds = {"getCounter": "counter", "getOpStatsLogger": "summary", "registerGauge": "gauge"}
    stats: dict[str, str] = {}
    pending = ""
    for line in code.splitlines():
        if (constant := re.search(r"ldc\s+#\d+\s+// String ([A-Za-z_]+)$", line)) is not None:
            pending = constant.group(1)
        elif pending and (call := re.search(r"StatsLogger\.(getCounter|getOpStatsLogger|registerGauge)", line)):
            stats[pending] = kinds[call.group(1)]
            pending = ""
    # for (i...) registerEntryLogUsageBucketsLeGauge("entry_log_usage_buckets_le_" + (i + 1) * 10, i)
    assert "entry_log_usage_buckets_le_\\u0001" in code
    stats.update({f"entry_log_usage_buckets_le_{n}": "gauge" for n in range(10, 101, 10)})
    return stats


async def _exposition(url: str) -> tuple[dict[str, str], dict[str, float]]:
    """(family -> type, sample with its labels -> value) of a bookie's /metrics."""
    async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as response:
        text = await response.text()
    types = {line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE ")}
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line and not line.startswith("#")}
    return types, samples


async def test_our_bookie_serves_the_gc_stats_bookkeeper_4_18_added(bookie_factory: BookieFactory) -> None:
    new_in_4_18 = {n: kind for n, kind in bookkeeper_418_gc_stats().items() if n not in IN_4_17}
    assert {"ENTRY_LOG_SPACE_BYTES", "ENTRY_LOG_COMPACT_RATIO", "GC_LEDGER_RUNTIME", "COMPACT_RUNTIME",
            "EXTRACT_META_RUNTIME"} <= set(new_in_4_18)

    cluster = bookie_factory(1, **GC_OVERRIDES)
    async with client(cluster) as bk:
        for seed in range(3):
            await write_ledger(bk, 60, 8192, seed)
    await gc_now(cluster[0])  # a forced cycle with both compactions: every phase runs
    types, samples = await _exposition(cluster[0].http_url)

    for name, kind in new_in_4_18.items():
        assert types.get(f"bookie_{name}") == kind, f"bookie_{name}: served with BookKeeper's type {kind}"
    for name in RUNTIMES:
        events = [v for k, v in samples.items() if k.startswith(f'bookie_{name}_count{{success="true"')]
        assert len(events) == 1 and events[0] >= 1, f"bookie_{name}: the forced cycle's event"
        seconds = samples[f"bookie_{name}_SECONDS"]
        total_ms = next(v for k, v in samples.items() if k.startswith(f'bookie_{name}_sum{{success="true"'))
        assert abs(total_ms - seconds * 1000) <= 1e-6 * max(1.0, total_ms), "one clock for both forms"
