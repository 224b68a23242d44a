"""A topic deleted with its ledgers leaves the newest ledger ids of all deleted: the audit still counts their bytes
as garbage. The snapshot records the highest id the ledger id generator had issued when it started (ZooKeeper's
sequence counter, as BookKeeper's generator and Pulsar's broker use it), so a ledger on disk at or below that id
and absent from the snapshot is deleted, not "newer than the snapshot"; an id above it still is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_audit import audits
from bookie_audit.snapshot import export_snapshot


def _metadata() -> LedgerMetadata:
    return LedgerMetadata(ensemble_size=1, write_quorum_size=1, ack_quorum_size=1, ensembles={0: ("b:3181",)},
                          state=LedgerState.CLOSED, last_entry_id=0, length=0, digest_type=DigestType.CRC32C,
                          password=b"p")


async def test_deleted_ledgers_above_the_newest_live_one_are_garbage(zookeeper: Any, spark: Any,
                                                                      tmp_path: Path) -> None:
    root = "/audit-newest-deleted/ledgers"
    async with MetadataStore(zookeeper.connect_string, root) as store:
        await store.init_cluster()
        ids = [await store.generate_ledger_id() for _ in range(4)]
        for lid in ids:
            await store.create_ledger_metadata(lid, _metadata())
        for lid in ids[1:]:     # a deleted topic: the three newest ledgers
            await store.delete_ledger_metadata(lid)
        manifest = await export_snapshot(store, str(tmp_path / "snap"))
    assert manifest.max_ledger_id == ids[0]
    assert manifest.issued_high_water >= ids[-1], (manifest.issued_high_water, ids)
    later = manifest.issued_high_water + 1     # what the generator gives next, after the snapshot
    snap = audits.load_snapshot(spark, str(tmp_path / "snap"), manifest)
    rows = [("b:3181", "/l/0.log", lid, 100, manifest.started_ms - 60_000) for lid in [*ids, later]]
    ledger_map = spark.createDataFrame(rows, "bookie string, path string, ledger_id long, bytes long, mtime_ms long")
    classes = {r["ledger_id"]: r["class"] for r in audits.classify(ledger_map, snap).collect()}
    assert classes == {ids[0]: audits.LIVE, ids[1]: audits.DELETED, ids[2]: audits.DELETED, ids[3]: audits.DELETED,
                       later: audits.NEWER}
