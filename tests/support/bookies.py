"""pytest fixtures around real bookie processes (``bookie serve``), each on its own 127.0.0.x address.

``bookies``: three bookies on a session-wide ledgers root, started once per session. Tests that only write
and read share them; they must not stop them.
``bookie_factory``: private bookies for tests that kill, restart, fill or reconfigure them; each test gets
its own ledgers root and every bookie it made is stopped afterwards.
Every bookie's admin API accepts ``tests.support.admin_api.TEST_ADMIN_TOKEN`` (and nothing else mutates it).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bookie_fleet.local_bookies import LocalBookie, plan_bookies, start_all, stop_all
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.admin_api import TEST_ADMIN_TOKEN

# Private bookies take addresses from 127.0.0.100 to .159, in turn, so they never collide with the shared ones
# (127.0.0.11 up) nor with cluster_factory's (.160 up). An address comes round again after 60 bookies; one still
# running there by then (a package-scoped fixture's) keeps its port, and the new bookie takes a free one.
_next_host = itertools.cycle(range(100, 160))


@dataclass
class BookieSet:
    bookies: list[LocalBookie]
    zk_connect: str
    ledgers_root: str

    @property
    def ids(self) -> list[str]:
        return [b.bookie_id for b in self.bookies]

    def __getitem__(self, i: int) -> LocalBookie:
        return self.bookies[i]

    def __len__(self) -> int:
        return len(self.bookies)


# Fast checkpoints so tests exercise entry logs, not just the write cache. The disk thresholds are at 99.9%:
# the test machine's disk is shared and its free space moves with other work, and a bookie turning read-only
# (and running GC at once, which drops ledgers written without metadata) must be a test's decision, made
# with its own thresholds on its own small disk (see tests/bookie/test_read_only_disk.py). For the same reason
# scheduled GC waits an hour: tests that write without ledger metadata must not see their ledgers collected;
# GC tests set their own schedule and trigger cycles themselves.
TEST_OVERRIDES: dict[str, Any] = {"flushInterval": 1000, "diskCheckInterval": 500, "zkTimeout": 6000,
                                  "diskUsageThreshold": 0.999, "diskUsageWarnThreshold": 0.998,
                                  "gcWaitTime": 3_600_000}


@pytest.fixture(scope="session")
def bookies(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BookieSet]:
    root = f"/shared-{uuid.uuid4().hex[:8]}/ledgers"
    planned = plan_bookies(3, tmp_path_factory.mktemp("bookies"), zookeeper.connect_string, root,
                           first_host=11, admin_token=TEST_ADMIN_TOKEN, **TEST_OVERRIDES)
    try:
        start_all(planned, 90)
        yield BookieSet(planned, zookeeper.connect_string, root)
    finally:
        stop_all(planned)


BookieFactory = Callable[..., BookieSet]


@pytest.fixture
def bookie_factory(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[BookieFactory]:
    """``make(count, start=True, **conf overrides)`` -> BookieSet on a fresh ledgers root."""
    made: list[LocalBookie] = []
    root = f"/t-{uuid.uuid4().hex[:8]}/ledgers"

    def make(count: int = 1, *, start: bool = True, data_dir: Path | None = None,
             admin_token: str | None = TEST_ADMIN_TOKEN, **overrides: Any) -> BookieSet:
        base = data_dir or tmp_path / f"set{len(made)}"
        planned = [plan_bookies(1, base / f"b{i}", zookeeper.connect_string, root, first_host=next(_next_host),
                                admin_token=admin_token, **{**TEST_OVERRIDES, **overrides})[0]
                   for i in range(count)]
        made.extend(planned)
        if start:
            start_all(planned, 90)
        return BookieSet(planned, zookeeper.connect_string, root)

    try:
        yield make
    finally:
        stop_all(made)
