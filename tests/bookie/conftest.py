"""``stopped_bookie``: the directories of a real bookie that wrote two ledgers across several rolled entry logs
(logSizeLimit 200000) and stopped cleanly, for the inspection CLI tests (read only: tests copy before damaging)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.bookies import TEST_OVERRIDES, _next_host
from tests.support.raw_client import RawConnection

ENTRY_BYTES = 8000
ENTRIES = 40


@dataclass
class StoppedBookie:
    bookie: LocalBookie
    ledgers: tuple[int, int]


async def _write(bookie_id: str, ledgers: tuple[int, int]) -> None:
    async with await RawConnection.open(bookie_id) as conn:
        for entry_id in range(ENTRIES):
            for ledger in ledgers:
                await conn.add(ledger, entry_id, bytes([entry_id % 256]) * ENTRY_BYTES)


@pytest.fixture(scope="package")
def stopped_bookie(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoppedBookie]:
    [bookie] = plan_bookies(1, tmp_path_factory.mktemp("inspected"), zookeeper.connect_string,
                            f"/inspect-{uuid.uuid4().hex[:8]}/ledgers", first_host=next(_next_host),
                            **{**TEST_OVERRIDES, "logSizeLimit": 200000})
    ledgers = (7001, 7002)
    try:
        bookie.start()
        asyncio.run(_write(bookie.bookie_id, ledgers))
    finally:
        bookie.stop()
    yield StoppedBookie(bookie, ledgers)
