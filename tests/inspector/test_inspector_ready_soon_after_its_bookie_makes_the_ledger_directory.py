"""An inspector started before its bookie has made the ledger directory (in a pod the sidecar starts beside the
bookie, not after it) answers ready at the first readiness check after the directory appears, however long its own
retries have grown meanwhile, and says it is not ready once, not at every retry: a pod's readiness follows its
bookie's, one probe behind at most."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import JavaDisk
from tests.support.rest import get
from tests.support.waiting import eventually

HOUR_MS = 3_600_000
# Its retries while not ready come 1, 3 and 7 s after its first look, then 15 s: after this long the next one is
# seconds away when the directory appears.
RETRIES_GROWN_S = 8


async def test_ready_at_the_first_check_after_the_bookie_makes_its_ledger_directory(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    volume = tmp_path / "ledgers"          # the ledger volume before the bookie has written to it
    inspector = await asyncio.to_thread(inspectors, volume, wait=False, gcWaitTime=HOUR_MS)
    is_ready = f"{inspector.http_url}/api/v1/bookie/is_ready"

    async def not_ready_naming_the_directory() -> bool:
        answer = await get(is_ready)
        return answer.status == 503 and str(volume / "current") in answer.text

    await eventually(not_ready_naming_the_directory, "503 naming the missing ledger directory", within=60)
    await asyncio.sleep(RETRIES_GROWN_S)
    assert (await get(is_ready)).status == 503, "ready without a ledger directory"

    await asyncio.to_thread(java_disk.copy, volume)   # the bookie starts: its directory and logs appear

    answer = await get(is_ready)
    assert answer.status == 200, f"the first check after the directory appeared: {answer.status} {answer.text}"
    logged = inspector.log_path.read_text()
    assert logged.count("inspector not ready: ledger directory") == 1, logged
    assert logged.count("inspector ready:") == 1, logged
