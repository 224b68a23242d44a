"""An inspector that cannot read its bookie's ledger volume, or ZooKeeper, is not ready and says which: its
readiness probe and the explain endpoint answer 503 naming what is missing, never an empty "nothing pinned"."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie_fleet.inspectors import InspectorProcess
from bookie_fleet.processes import free_port

from tests.inspector.conftest import JavaDisk
from tests.support.rest import get
from tests.support.waiting import eventually


async def _says(url: str, *words: str) -> None:
    async def answers() -> bool:
        ready = await get(url)
        return ready.status == 503 and all(w in ready.text for w in words)

    await eventually(answers, f"{url} answering 503 naming {words}", within=60)


async def test_a_missing_ledger_volume_is_named(inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    missing = tmp_path / "not-mounted"
    inspector = await asyncio.to_thread(inspectors, missing, wait=False)
    await _says(f"{inspector.http_url}/api/v1/bookie/is_ready", str(missing / "current"))
    explain = await get(f"{inspector.http_url}/api/v1/bookie/entry_logs")
    assert explain.status == 503 and str(missing / "current") in explain.text, explain.text
    assert "bookie_inspector_ready 0" in (await get(f"{inspector.http_url}/metrics")).text


async def test_zookeeper_out_of_reach_is_named(java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess],
                                               tmp_path: Path) -> None:
    nobody = f"127.0.0.1:{free_port()}"  # nothing listens there
    inspector = await asyncio.to_thread(inspectors, java_disk.copy(tmp_path / "ledgers"), wait=False,
                                        zk_connect=nobody)
    await _says(f"{inspector.http_url}/api/v1/bookie/is_ready", "ZooKeeper", nobody)
    explain = await get(f"{inspector.http_url}/api/v1/bookie/entry_logs")
    assert explain.status == 503 and "ZooKeeper" in explain.text, explain.text
