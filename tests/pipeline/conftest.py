"""Fixtures of the Spark audit tests: one SparkSession for the session, a synthetic fleet in a real ZooKeeper.

``spark``        local[2], 4 shuffle partitions, no UI; stopped at the end of the session
``fleet``        tests/pipeline/fleetgen.py's fleet on disk, its ledgers created in ZooKeeper, a snapshot
``ledger_map``   the fleet read by the entrylog data source in metadata mode (cached)
``hdfs``         a real HDFS (Hadoop's MiniDFSCluster, tests/support/hdfs.py), started once for the session
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
ledgers_root = _support.ledgers_root
bookie_factory = importlib.import_module("tests.support.bookies").bookie_factory
cluster_factory = importlib.import_module("tests.support.java_bookies").cluster_factory
hdfs = importlib.import_module("tests.support.hdfs").hdfs


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


@pytest.fixture(scope="session")
def snap(spark: Any, fleet: FleetFixture) -> Any:
    from bookie_audit import audits

    return audits.load_snapshot(spark, fleet.snapshot_dir, fleet.manifest)


@pytest.fixture(scope="session")
def classified(ledger_map: Any, snap: Any) -> Iterator[Any]:
    from bookie_audit import audits

    df = audits.classify(ledger_map, snap).cache()
    try:
        yield df
    finally:
        df.unpersist()


@pytest.fixture(scope="session")
def usage_logs(classified: Any, fleet: FleetFixture) -> Any:
    from bookie_audit import audits

    return audits.usage_by_log(classified, fleet.manifest.started_ms).cache()


@pytest.fixture(scope="session")
def audit_out(spark: Any, fleet: FleetFixture, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The whole audit (run_audit) over the fleet, local[2]: its output directory and summary."""
    from bookie_audit.files import LogInput
    from bookie_audit.run import AuditOptions, run_audit

    out = str(tmp_path_factory.mktemp("audit"))
    opts = AuditOptions(logs=[LogInput(fleet.fleet.root)], metadata=fleet.snapshot_dir, out=out,
                        min_age_days=10, split_bytes=64 << 10)
    return out, run_audit(spark, opts)
