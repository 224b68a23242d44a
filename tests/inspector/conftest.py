"""Fixtures of the inspector's tests: the disk of a real Apache BookKeeper bookie, written once per session.

``java_disk``  one Java bookie (DbLedgerStorage, small logs) wrote three Pulsar-like topics, entries interleaved
               so every log holds all three; two topics' ledgers were then deleted in ZooKeeper; the bookie was
               stopped cleanly, so its directory holds finalized logs with ledgers maps, a last log without one
               and the log it preallocated. Tests copy ``ledger_dir`` and point inspectors at the copy.
``inspectors`` starts inspector processes (``bookie inspect serve``; HTTPS ones with the CA to verify them) and
               stops them after the test.
"""

from __future__ import annotations

import asyncio
import importlib
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_fleet.inspectors import InspectorProcess
from bookie_fleet.processes import BookieProcess, free_port
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.java_bookies import start_cluster

raw = importlib.import_module("tests.support.raw_client")

TOPICS = {1: "persistent://public/default/clicks", 2: "persistent://public/default/views",
          3: "persistent://public/default/orders"}
DELETED = (1, 2)
KEPT = 3
ENTRIES = 60
JAVA: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
        "gcWaitTime": 3_600_000, "flushInterval": 500, "logSizeLimit": 64 * 1024}


@dataclass
class JavaDisk:
    bookie: BookieProcess      # stopped
    ledger_dir: Path
    zk_connect: str
    ledgers_root: str

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.ledger_dir, to, ignore=shutil.ignore_patterns("ledgers", "locations"))
        return to


async def _write(store: MetadataStore, bookie_id: str, rng: random.Random) -> None:
    for lid, topic in TOPICS.items():
        await store.create_ledger_metadata(lid, LedgerMetadata(
            ensemble_size=1, write_quorum_size=1, ack_quorum_size=1, ensembles={0: (bookie_id,)},
            state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0, digest_type=DigestType.CRC32C,
            password=raw.PASSWORD, custom_metadata={"pulsar/managed-ledger": topic.encode()}))
    conn = await raw.RawConnection.open(bookie_id)
    try:
        for e in range(ENTRIES):
            for lid in TOPICS:
                resp = await conn.add(lid, e, body=raw.entry(lid, e, rng.randbytes(rng.randint(300, 2500))))
                assert resp.status == 0, (lid, e, resp)
    finally:
        await conn.close()
    for lid in DELETED:
        await store.delete_ledger_metadata(lid)


@pytest.fixture(scope="session")
def java_disk(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaDisk]:
    cluster = start_cluster("java", 1, tmp_path_factory.mktemp("java-disk"), zookeeper, first_host=86, **JAVA)
    (bookie,) = cluster.bookies
    try:
        async def write() -> None:
            async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store:
                await _write(store, bookie.bookie_id, random.Random(86))

        asyncio.run(write())
        bookie.stop()   # a clean stop: every entry flushed, the logs' last state on disk
        yield JavaDisk(bookie, bookie.ledger_dir, cluster.zk_connect, cluster.ledgers_root)
    finally:
        cluster.stop()


@pytest.fixture
def inspectors(java_disk: JavaDisk, tmp_path: Path) -> Iterator[Callable[..., InspectorProcess]]:
    """``make(ledger_dir, **conf)``: an inspector of ``java_disk``'s bookie reading ``ledger_dir``, started (and
    waited for, unless ``wait=False``)."""
    started: list[InspectorProcess] = []

    def make(ledger_dir: Path, *, wait: bool = True, zk_connect: str | None = None, ca_file: Path | None = None,
             **conf: Any) -> InspectorProcess:
        name = f"inspector-{len(started)}"
        address = "127.0.0.87"
        proc = InspectorProcess(bookie=java_disk.bookie, address=address, http_port=free_port(address, 8080),
                                data_dir=tmp_path / name, zk_connect=zk_connect or java_disk.zk_connect,
                                ledgers_root=java_disk.ledgers_root, admin_token=TEST_ADMIN_TOKEN,
                                overrides={"ledgerDirectories": str(ledger_dir), **conf}, ca_file=ca_file)
        started.append(proc)
        proc.start(wait=False)
        if wait:
            proc.wait_ready()
        else:
            proc.wait_serving()
        return proc

    try:
        yield make
    finally:
        for proc in started:
            proc.stop()
