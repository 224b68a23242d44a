"""Fixtures of the Spark audit tests: one SparkSession for the session, a synthetic fleet in a real ZooKeeper.

``spark``        local[2], 4 shuffle partitions, no UI; stopped at the end of the session
``fleet``        tests/pipeline/fleetgen.py's fleet on disk, its ledgers created in ZooKeeper, a snapshot
``ledger_map``   the fleet read by the entrylog data source in metadata mode (cached)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bookie.metadata.store import MetadataStore
from bookie_audit.snapshot import Manifest, export_snapshot

from tests.pipeline.fleetgen import Fleet, build

_support = importlib.import_module("tests.support.zookeeper")
zookeeper = _support.zookeeper


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from bookie_audit.spark import build_session

    session = build_session("local[2]", app_name="bookie-audit-tests", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2", "spark.driver.memory": "1g"})
    try:
        yield session
    finally:
        session.stop()


@dataclass
class FleetFixture:
    fleet: Fleet
    snapshot_dir: str
    manifest: Manifest
    zk: str
    root: str


@pytest_asyncio.fixture(scope="session")
async def fleet(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[FleetFixture]:
    base = tmp_path_factory.mktemp("fleet")
    fl = build(str(base / "logs"))
    root = "/audit-fleet/ledgers"
    store = MetadataStore(zookeeper.connect_string, root, session_timeout_ms=4000)
    await store.connect()
    try:
        await store.init_cluster()
        for lid, led in fl.ledgers.items():
            if led.in_metadata:
                await store.create_ledger_metadata(lid, led.metadata())
        manifest = await export_snapshot(store, str(base / "snapshot"))
    finally:
        await store.close()
    yield FleetFixture(fl, str(base / "snapshot"), manifest, zookeeper.connect_string, root)


@pytest.fixture(scope="session")
def ledger_map(spark: Any, fleet: FleetFixture) -> Iterator[Any]:
    df = spark.read.format("entrylog").option("mode", "metadata").load(fleet.fleet.root).cache()
    try:
        yield df
    finally:
        df.unpersist()
