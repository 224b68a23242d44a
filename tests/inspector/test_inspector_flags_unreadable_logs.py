"""A damaged entry log is reported as such, with the reason, and the rest of the answer still comes: a log whose
header is not an entry log's, and one whose records are cut by garbage in the middle (a scan cannot trust it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.storage import entrylog_format as ef
from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import JavaDisk
from tests.support.rest import get


def _damage(files: list[Path]) -> tuple[Path, Path]:
    """Breaks the header of one finalized log, and the first record of another whose header no longer points at
    a ledgers map (as a crash leaves it), so the inspector must scan it."""
    finalized = [p for p in files if p.stat().st_size >= ef.HEADER_SIZE
                 and ef.LogHeader.decode(p.read_bytes()[:ef.HEADER_SIZE]).has_ledgers_map]
    assert len(finalized) >= 3, files
    bad_header, bad_records = finalized[0], finalized[1]
    with open(bad_header, "r+b") as f:
        f.write(b"NOPE")
    data = bytearray(bad_records.read_bytes())
    data[8:20] = bytes(12)   # ledgers map offset and count
    data[ef.HEADER_SIZE: ef.HEADER_SIZE + 4] = (-7).to_bytes(4, "big", signed=True)  # the first record's size
    bad_records.write_bytes(bytes(data))
    return bad_header, bad_records


async def test_damaged_logs_are_flagged_and_the_others_explained(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    disk = java_disk.copy(tmp_path / "ledgers")
    files = sorted((disk / "current").glob("*.log"), key=lambda p: int(p.stem, 16))
    bad_header, bad_records = _damage(files)

    inspector = await asyncio.to_thread(inspectors, disk)
    answer = await get(f"{inspector.http_url}/api/v1/bookie/entry_logs")
    assert answer.status == 200, answer.text
    logs = {e["logId"]: e for e in answer.json()["ledgerDirs"][0]["entryLogs"]}
    assert len(logs) == len(files), "every log listed, damaged or not"
    header = logs[bad_header.stem]
    assert header["figures"]["state"] == "unreadable" and "bad header" in header["figures"]["why"], header
    assert header["verdict"].startswith("unreadable: ")
    records = logs[bad_records.stem]
    assert records["figures"]["state"] == "unreadable" and "corrupt" in records["figures"]["why"], records
    others = [e for name, e in logs.items() if name not in (bad_header.stem, bad_records.stem)]
    assert others and all(e["figures"]["state"] == "fresh" and "totalBytes" in e for e in others)
    metrics = (await get(f"{inspector.http_url}/metrics")).text
    assert "bookie_UNREADABLE_ENTRY_LOGS 2" in metrics
