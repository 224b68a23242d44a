"""The audit reads entry logs from a real HDFS (Hadoop's MiniDFSCluster) through WebHDFS,
``webhdfs://namenode:http-port/path``, and finds there exactly what it finds in the local ledger directories
the logs were copied from: every table of a full audit the same, which reads the logs both ways (the ledgers
maps: the data source's metadata mode; every record: its scan mode, logs split into offset ranges), and the
bookies named by the cookies copied along."""

from __future__ import annotations

import asyncio
import importlib
import random
from pathlib import Path
from typing import Any

from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_audit.files import LogInput, discover
from bookie_audit.run import AuditOptions, Summary, run_audit
from bookie_audit.snapshot import export_snapshot

from tests.pipeline.tables import audit_tables

raw = importlib.import_module("tests.support.raw_client")

DELETED = (1, 2)  # below the highest kept id: garbage, not ledgers created after the snapshot
KEPT = (3, 4, 5)
ENTRIES = 40
SPLIT = 16 << 10  # several offset ranges per log: each task reads its range, not the whole file


async def _write_delete_stop_and_snapshot(bs: Any, snapshot: Path) -> None:
    rng = random.Random(7)
    store = MetadataStore(bs.zk_connect, bs.ledgers_root, session_timeout_ms=6000)
    await store.connect()
    try:
        conns = {b: await raw.RawConnection.open(b) for b in bs.ids}
        try:
            for lid in (*DELETED, *KEPT):
                md = LedgerMetadata(ensemble_size=3, write_quorum_size=2, ack_quorum_size=2,
                                    ensembles={0: tuple(bs.ids)}, state=LedgerState.CLOSED,
                                    last_entry_id=ENTRIES - 1, length=0, digest_type=DigestType.CRC32C,
                                    password=raw.PASSWORD)
                await store.create_ledger_metadata(lid, md)
                for e in range(ENTRIES):
                    body = raw.entry(lid, e, rng.randbytes(rng.randint(200, 2000)))
                    for i in range(2):
                        resp = await conns[bs.ids[(e + i) % 3]].add(lid, e, body=body)
                        assert resp.status == 0, (lid, e, resp)
            for lid in DELETED:
                await store.delete_ledger_metadata(lid)
        finally:
            for c in conns.values():
                await c.close()
        # Graceful stops (checkpointed logs on disk) before the snapshot: logs written after it started would
        # make the deleted ledgers "newer than the snapshot", not garbage.
        await asyncio.to_thread(lambda: [b.stop() for b in bs.bookies])
        await export_snapshot(store, str(snapshot))
    finally:
        await store.close()


async def test_audit_over_webhdfs_gives_the_tables_of_the_local_copy(bookie_factory: Any, hdfs: Any, spark: Any,
                                                                     tmp_path: Path) -> None:
    bs = bookie_factory(3)
    await _write_delete_stop_and_snapshot(bs, tmp_path / "snap")

    # Each ledger directory whole (cookie, entry logs, RocksDB index) under a folder not named after its bookie:
    # the bookie ids must come from the cookies read over WebHDFS.
    local = {str(b.ledger_dir): f"bookie{i}" for i, b in enumerate(bs.bookies)}
    remote = {hdfs.uri(f"/fleet/{name}"): name for name in local.values()}
    for directory, name in local.items():
        await asyncio.to_thread(hdfs.put_tree, Path(directory), f"/fleet/{name}")

    logs = await asyncio.to_thread(discover, [LogInput(u) for u in remote])
    assert sorted({log.bookie for log in logs}) == sorted(bs.ids)
    assert any(log.size > 2 * SPLIT for log in logs)

    def audit(roots: dict[str, str], name: str) -> tuple[Summary, dict[str, list[str]]]:
        opts = AuditOptions(logs=[LogInput(r) for r in roots], metadata=str(tmp_path / "snap"),
                            out=str(tmp_path / name), min_age_days=0, split_bytes=SPLIT, keep_records=True)
        return run_audit(spark, opts), audit_tables(tmp_path / name, roots)

    _, local_tables = await asyncio.to_thread(audit, local, "local")
    summary, remote_tables = await asyncio.to_thread(audit, remote, "remote")
    assert remote_tables == local_tables
    assert len(remote_tables["ledger_map"]) >= len(KEPT) + len(DELETED)
    assert len(remote_tables["records"]) == (len(KEPT) + len(DELETED)) * ENTRIES * 2
    assert summary.bookies == sorted(bs.ids)
    assert summary.totals["garbage_bytes"] > 0 and summary.totals["flagged"] == 0
    assert summary.replication["ok"] == len(KEPT) * ENTRIES and summary.replication["checksum_failures"] == 0
