"""pytest fixtures around a real ZooKeeper server.

``zookeeper``: one server for the whole session (stopped at the end, nothing left running).
``ledgers_root``: a fresh ``/test-<uuid>/ledgers`` per test, so tests never see each other's metadata.
``metadata_store``: a connected ``MetadataStore`` on that root with ``init_cluster()`` done.

Import the fixtures into a conftest: ``from tests.support.zookeeper import zookeeper, ledgers_root, ...``.
Tests that stop the server must use their own ``ZooKeeperServer`` (see ``zookeeper_factory``) so the
shared one stays up.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zookeeper_factory(tmp_path: Path) -> Iterator[Callable[[], ZooKeeperServer]]:
    """Private servers for tests that stop/pause ZooKeeper; all stopped after the test."""
    servers: list[ZooKeeperServer] = []

    def make() -> ZooKeeperServer:
        server = ZooKeeperServer(tmp_path / f"zk{len(servers)}")
        servers.append(server)
        return server.start()

    try:
        yield make
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def ledgers_root() -> str:
    return f"/test-{uuid.uuid4().hex}/ledgers"


@pytest_asyncio.fixture
async def metadata_store(zookeeper: ZooKeeperServer, ledgers_root: str) -> AsyncIterator[MetadataStore]:
    store = MetadataStore(zookeeper.connect_string, ledgers_root, session_timeout_ms=4000)
    await store.connect()
    try:
        await store.init_cluster()
        yield store
    finally:
        await store.close()
