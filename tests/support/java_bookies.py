"""pytest fixtures: real Apache BookKeeper bookies (and, once available, our own) in a real cluster.

``java_cluster``, ``python_cluster``: 4 bookies of that kind for the whole session, on their own ledgers root
(tests must not kill them); ``cluster``: each of the two in turn, so one test specifies both.
``cluster_factory``: private clusters for tests that kill, pause or restart bookies; all stopped after the
test. ``kind`` is ``"java"`` (``org.apache.bookkeeper.server.Main``) or ``"python"`` (``bookie serve``);
``bookie_kind`` gives each in turn.
Nothing is left running: every process is stopped in a ``finally``.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bookie.client import ClientConfig
from bookie.metadata.store import MetadataStore
from bookie_fleet.java_bookies import JavaBookie, plan_java_bookies
from bookie_fleet.java_bookies import start_all as start_java
from bookie_fleet.processes import BookieProcess  # what JavaBookie and LocalBookie share
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.admin_api import TEST_ADMIN_TOKEN


async def init_cluster(zk_connect: str, ledgers_root: str) -> None:
    async with MetadataStore(zk_connect, ledgers_root) as store:
        await store.init_cluster()


@dataclass
class BookieCluster:
    zk_connect: str
    ledgers_root: str
    bookies: list[Any] = field(default_factory=list)
    kind: str = "java"

    def client_config(self, **overrides: Any) -> ClientConfig:
        values: dict[str, Any] = {"zk_servers": self.zk_connect, "ledgers_root": self.ledgers_root,
                                  "zk_session_timeout_ms": 6000, "add_timeout_s": 5.0, "read_timeout_s": 5.0}
        values.update(overrides)
        return ClientConfig(**values)

    def by_id(self, bookie_id: str) -> Any:
        return next(b for b in self.bookies if b.bookie_id == bookie_id)

    @property
    def bookie_ids(self) -> list[str]:
        return [b.bookie_id for b in self.bookies]

    def stop(self) -> None:
        for b in self.bookies:
            try:
                b.stop()
            except Exception:  # stop the others whatever happens
                b.kill()


def start_cluster(kind: str, count: int, base: Path, zk: ZooKeeperServer, first_host: int, *,
                  _root: str | None = None, java_lib: Path | None = None, **overrides: Any) -> BookieCluster:
    """``kind``: java, python or mixed (Java bookies first, then ours, on one ledgers root); ``java_lib``: the
    Java bookies' jars when not ``$BOOKIE_FLEET_BK_LIB``'s (another Apache BookKeeper version)."""
    root = _root or f"/{kind}-{uuid.uuid4().hex[:8]}/ledgers"
    if _root is None:
        with ThreadPoolExecutor(1) as pool:  # its own loop, whether or not the caller runs one
            pool.submit(asyncio.run, init_cluster(zk.connect_string, root)).result()
    cluster = BookieCluster(zk.connect_string, root, kind=kind)
    if kind == "mixed":  # half Apache BookKeeper bookies, half ours, one cluster
        java = start_cluster("java", count // 2, base / "java", zk, first_host, _root=root, java_lib=java_lib,
                             **overrides)
        try:
            ours = start_cluster("python", count - count // 2, base / "python", zk, first_host + count // 2,
                                 _root=root, **overrides)
        except BaseException:
            java.stop()
            raise
        java.bookies += ours.bookies
        java.kind = "mixed"
        return java
    if kind == "java":
        cluster.bookies = list(plan_java_bookies(count, base, zk.connect_string, root, first_host=first_host,
                                                 lib_dir=java_lib, **overrides))
        try:
            start_java(cluster.bookies)
        except BaseException:
            cluster.stop()
            raise
        return cluster
    from bookie_fleet.local_bookies import plan_bookies, start_all

    values = {"journalSyncData": False, "zkTimeout": 6000, **overrides}
    cluster.bookies = list(plan_bookies(count, base, zk.connect_string, root, first_host=first_host,
                                        admin_token=TEST_ADMIN_TOKEN, **values))
    try:
        start_all(cluster.bookies)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def java_cluster(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BookieCluster]:
    cluster = start_cluster("java", 4, tmp_path_factory.mktemp("java-cluster"), zookeeper, first_host=51)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def python_cluster(zookeeper: ZooKeeperServer,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[BookieCluster]:
    cluster = start_cluster("python", 4, tmp_path_factory.mktemp("python-cluster"), zookeeper, first_host=61)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["java", "python"])
def cluster(request: pytest.FixtureRequest) -> BookieCluster:
    """The shared 4-bookie cluster of each kind, in turn (tests must not stop its bookies)."""
    shared: BookieCluster = request.getfixturevalue(f"{request.param}_cluster")
    return shared


@pytest.fixture(params=["java", "python"])
def bookie_kind(request: pytest.FixtureRequest) -> str:
    """Each kind in turn, for fault tests that build their own cluster with ``cluster_factory(bookie_kind, ...)``."""
    return str(request.param)


_next_host = itertools.cycle(range(160, 250, 5))  # bookie_factory (tests/support/bookies.py) uses 100+


@pytest.fixture
def cluster_factory(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[Callable[..., BookieCluster]]:
    """``make(kind, count, **conf)``: a private cluster (own ledgers root, own bookies) for fault tests.

    It blocks while the bookies start: from an async test call ``await asyncio.to_thread(make, ...)``.
    """
    clusters: list[BookieCluster] = []

    def make(kind: str = "java", count: int = 3, **overrides: Any) -> BookieCluster:
        base = tmp_path / f"cluster{len(clusters)}"
        cluster = start_cluster(kind, count, base, zookeeper, first_host=next(_next_host), **overrides)
        clusters.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.stop()


__all__ = ["BookieCluster", "BookieProcess", "JavaBookie", "bookie_kind", "cluster", "cluster_factory", "java_cluster",
           "python_cluster"]
