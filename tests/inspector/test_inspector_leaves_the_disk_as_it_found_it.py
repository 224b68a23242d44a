"""The inspector works from a read-only mount of its bookie's ledger volume, as the operator mounts it, and leaves
the disk as it found it: the same files with the same bytes and times after it explained the disk and streamed
every log, and no lock on any log while it reads one (BookKeeper's GC must never wait for it; our own bookie's
readers do take one)."""

from __future__ import annotations

import asyncio
import hashlib
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from bookie.storage.log_files import held_by_other_process
from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import JavaDisk
from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.rest import get


class ReadOnlyMountInspector(InspectorProcess):
    """An inspector in a mount namespace of its own where its ledger directory is a read-only bind mount."""

    def command(self) -> list[str]:
        d = str(self.overrides["ledgerDirectories"])
        inner = shlex.join(super().command())
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && exec {inner}"]


def _state(directory: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(directory)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


async def test_explains_from_a_read_only_mount_and_changes_nothing(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    disk = java_disk.copy(tmp_path / "ledgers")
    before = _state(disk)
    # Reads paced slowly, so that each log is still open in the inspector while the test looks for locks.
    plain = await asyncio.to_thread(inspectors, disk, wait=False, httpEntryLogReadRateByBytes=200_000)
    plain.stop()
    ro = ReadOnlyMountInspector(bookie=plain.bookie, address=plain.address, http_port=plain.http_port,
                                data_dir=tmp_path / "ro", zk_connect=plain.zk_connect,
                                ledgers_root=plain.ledgers_root, admin_token=TEST_ADMIN_TOKEN,
                                overrides=plain.overrides)
    try:
        await asyncio.to_thread(ro.start)
        explain = await get(f"{ro.http_url}/api/v1/bookie/entry_logs")
        assert explain.status == 200, explain.text
        logs = [e for e in explain.json()["ledgerDirs"][0]["entryLogs"]]
        assert logs and all(e["figures"]["state"] == "fresh" for e in logs)
        await _stream_every_log_checking_for_locks(ro, disk)
    finally:
        await asyncio.to_thread(ro.stop)
    assert _state(disk) == before
    print(f"{len(before)} files unchanged", file=sys.stderr)


async def _stream_every_log_checking_for_locks(inspector: Any, disk: Path) -> None:
    listing = (await get(f"{inspector.http_url}/api/v1/bookie/entry_log_files")).json()["entryLogs"]
    headers = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        big = [e for e in listing if e["size"] > 40_000]   # chunks of 20 kB at 200 kB/s: still streaming
        assert big, listing
        for entry in big:
            async with session.get(f"{inspector.http_url}{entry['url']}") as response:
                assert response.status == 200
                await response.content.read(1)   # the inspector has the log open now
                assert not held_by_other_process(disk / "current" / entry["name"]), entry["name"]
                rest = await response.read()
                assert 1 + len(rest) == entry["size"]
