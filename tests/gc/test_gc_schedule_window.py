"""Scheduled GC (every gcWaitTime, no REST call): minor compaction at its interval; major only inside
majorCompactionWindow, unless the disk is over gcDiskPressureRatio (RocketMQ's forcible clean), which runs
it at once."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from tests.gc.gcutil import GC_OVERRIDES, rest
from tests.support.bookies import BookieFactory


def window_not_now() -> str:
    start = datetime.datetime.now() + datetime.timedelta(hours=2)
    end = start + datetime.timedelta(hours=1)
    return f"{start:%H:%M}-{end:%H:%M}"


async def _details(url: str) -> dict[str, Any]:
    return dict((await rest("GET", f"{url}/api/v1/bookie/gc_details"))[0])


async def test_major_waits_for_window_unless_disk_pressure(bookie_factory: BookieFactory) -> None:
    schedule = {**GC_OVERRIDES, "gcWaitTime": 500, "minorCompactionInterval": 1, "majorCompactionInterval": 2,
                "majorCompactionWindow": window_not_now(), "gcDiskPressureRatio": 0}
    cluster = bookie_factory(1, **schedule)
    bookie = cluster[0]
    await asyncio.sleep(4.5)
    details = await _details(bookie.http_url)
    assert details["minorCompactionCounter"] >= 1, "minor runs on its own schedule"
    assert details["majorCompactionCounter"] == 0, "major is due but outside its window"

    bookie.overrides["gcDiskPressureRatio"] = 0.01  # any real disk is fuller than 1 %: pressure
    bookie.restart()
    deadline = asyncio.get_running_loop().time() + 10
    while (await _details(bookie.http_url))["majorCompactionCounter"] == 0:
        assert asyncio.get_running_loop().time() < deadline, "disk pressure should override the window"
        await asyncio.sleep(0.2)
