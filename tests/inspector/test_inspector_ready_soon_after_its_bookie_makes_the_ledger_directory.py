"""An inspector started before its bookie has made the ledger directory (in a pod the sidecar starts beside the
bookie, not after it) is ready seconds after the directory appears, not a GC period later, and says it is not ready
once, not at every retry: a pod's readiness follows its bookie's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import JavaDisk
from tests.support.rest import get
from tests.support.waiting import eventually

HOUR_MS = 3_600_000


async def test_ready_seconds_after_the_bookie_makes_its_ledger_directory(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    volume = tmp_path / "ledgers"          # the ledger volume before the bookie has written to it
    inspector = await asyncio.to_thread(inspectors, volume, wait=False, gcWaitTime=HOUR_MS)
    is_ready = f"{inspector.http_url}/api/v1/bookie/is_ready"

    async def not_ready_naming_the_directory() -> bool:
        answer = await get(is_ready)
        return answer.status == 503 and str(volume / "current") in answer.text

    await eventually(not_ready_naming_the_directory, "503 naming the missing ledger directory", within=60)
    await asyncio.sleep(4)                 # a few retries meanwhile: 1 s, then twice as long each time

    await asyncio.to_thread(java_disk.copy, volume)   # the bookie starts: its directory and logs appear

    async def ready() -> bool:
        return (await get(is_ready)).status == 200

    # Before the fix, the next look came a GC period later (at most a minute): 60 s after the start at best.
    await eventually(ready, "ready once the ledger directory exists", within=30)
    logged = inspector.log_path.read_text()
    assert logged.count("inspector not ready: ledger directory") == 1, logged
    assert "inspector ready:" in logged, logged
