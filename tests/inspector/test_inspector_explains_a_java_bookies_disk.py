"""The inspector explains a real Apache BookKeeper bookie's disk: every entry log, finalized or not, with the bytes
its records take (checked against the records themselves), the ledger that pins it and that ledger's Pulsar topic,
the verdict of BookKeeper's compaction thresholds; /metrics says the same as ``bookie_pinned_garbage_bytes``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.storage import entrylog_format as ef
from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import KEPT, TOPICS, JavaDisk
from tests.support.rest import get


def _records_by_ledger(path: Path) -> dict[int, int]:
    data = path.read_bytes()
    if len(data) < ef.HEADER_SIZE:
        return {}
    header = ef.LogHeader.decode(data)
    end = header.ledgers_map_offset if header.has_ledgers_map else len(data)
    out: dict[int, int] = {}
    for r in ef.iter_records(data, ef.HEADER_SIZE, end):
        out[r.ledger_id] = out.get(r.ledger_id, 0) + r.size + ef.RECORD_SIZE_PREFIX
    return out


async def test_every_log_its_live_bytes_and_the_topic_pinning_it(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    disk = java_disk.copy(tmp_path / "ledgers")
    inspector = await asyncio.to_thread(inspectors, disk, minorCompactionThreshold=0.2,
                                        majorCompactionThreshold=0.8)
    answer = await get(f"{inspector.http_url}/api/v1/bookie/entry_logs")
    assert answer.status == 200, answer.text
    body = answer.json()
    assert body["bookieId"] == java_disk.bookie.bookie_id
    assert (body["minorCompactionThreshold"], body["majorCompactionThreshold"]) == (0.2, 0.8)
    (d,) = body["ledgerDirs"]
    files = {int(p.stem, 16): p for p in (disk / "current").glob("*.log")}
    logs = {int(e["logId"], 16): e for e in d["entryLogs"]}
    assert set(logs) == set(files)
    sources = set()
    for log_id, e in logs.items():
        held = _records_by_ledger(files[log_id])
        assert e["totalBytes"] == sum(held.values()), (log_id, e)
        assert e["remainingBytes"] == held.get(KEPT, 0), (log_id, e)
        sources.add(e["metadataFrom"])
        if held.get(KEPT):
            assert [(p["ledgerId"], p["topic"]) for p in e["pinningLedgers"]] == [(KEPT, TOPICS[KEPT])]
        if not e["active"] and held:
            usage = held.get(KEPT, 0) / sum(held.values())
            assert e["usage"] == round(usage, 4)
            want = "no live ledger" if usage == 0 else "compacted at the next minor" if usage < 0.2 else \
                "compacted at the next major" if usage < 0.8 else "kept"
            assert want in e["verdict"], (usage, e["verdict"])
    assert sources == {"ledgers map", "scan"}, "finalized logs by their maps, the rest by a scan"
    assert sum(1 for e in logs.values() if e["figures"]["state"] == "fresh") == len(logs)

    flushed = [e for e in logs.values() if not e["active"]]
    garbage = sum(e["totalBytes"] - e["remainingBytes"] for e in flushed if e["remainingBytes"])
    metrics = (await get(f"{inspector.http_url}/metrics")).text
    series = f'bookie_pinned_garbage_bytes{{ledger="{KEPT}",topic="{TOPICS[KEPT]}"}} '
    (line,) = [ln for ln in metrics.splitlines() if ln.startswith(series)]
    assert float(line.split()[-1]) == garbage
    assert "bookie_inspector_ready 1" in metrics
    assert "bookie_ACTIVE_ENTRY_LOG_TOTAL" not in metrics, "the Java bookie exports BookKeeper's GC gauges itself"
