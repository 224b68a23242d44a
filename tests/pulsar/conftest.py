"""A Pulsar broker on three bookies, once per bookie implementation (ours, then Apache BookKeeper's).

The session's ZooKeeper is reused; the bookies and the broker belong to this folder (one set per
implementation, shared by its modules), because its tests kill and restart bookies. Each test writes its own
topics. Every process is stopped in a ``finally``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from bookie_fleet.pulsar import PulsarBroker
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.java_bookies import BookieCluster, start_cluster

# Entry logs roll at 256 KiB, so a few megabytes of messages leave many closed logs for GC to delete and
# the one log still open (which GC never touches) is small. Scheduled GC waits an hour: the tests force it
# over REST when they mean it.
BOOKIE_CONF: dict[str, Any] = {"logSizeLimit": 256 * 1024, "gcWaitTime": 3_600_000, "flushInterval": 1000}
# Apache BookKeeper's bookies as Pulsar's distribution configures them (its bookkeeper.conf): DbLedgerStorage
# (the code default, SortedLedgerStorage, keeps entries in memory until a 64 MB memtable fills); and their
# admin REST API, for forced GC.
JAVA_CONF: dict[str, Any] = {"http": True,
                             "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"}
FIRST_HOST = {"python": 71, "java": 81, "lts": 91}  # the LTS broker's bookies (test_pulsar_lts_broker.py)


@dataclass
class PulsarOnBookies:
    kind: str
    bookies: BookieCluster
    broker: PulsarBroker


@pytest.fixture(scope="package", params=["python", "java"])
def pulsar(request: pytest.FixtureRequest, zookeeper: ZooKeeperServer,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarOnBookies]:
    kind = str(request.param)
    base = tmp_path_factory.mktemp(f"pulsar-{kind}")
    extra: dict[str, Any] = JAVA_CONF if kind == "java" else {}
    bookies = start_cluster(kind, 3, base / "bookies", zookeeper, FIRST_HOST[kind], **BOOKIE_CONF, **extra)
    broker = PulsarBroker(base / "broker", zookeeper.connect_string, bookies.ledgers_root,
                          chroot=f"/pulsar-{kind}-{uuid.uuid4().hex[:8]}")
    try:
        broker.setup_metadata()
        broker.start()
        yield PulsarOnBookies(kind, bookies, broker)
    finally:
        broker.stop()
        bookies.stop()
