"""Apache BookKeeper's bookies serve no entry-log reads: the audit says what it still can from their admin REST
API and the metadata snapshot (``--rest-bookie``): disk use, entry-log count, the entries and bytes metadata
places on each bookie, the auditor's under-replication marks, and the bytes no metadata explains."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie.storage import entrylog_format as ef
from bookie_audit.rest_bookies import RestBookie, entries_on
from bookie_audit.run import AuditOptions, run_audit
from bookie_audit.snapshot import export_snapshot

raw = importlib.import_module("tests.support.raw_client")

KEPT = (1, 2, 3)
DELETED = (4,)
PAYLOAD = 1000  # one size for every entry: the estimate from a ledger's length is then exact
ENTRIES = 30


def test_entries_placed_on_a_bookie_by_write_sets() -> None:
    for ensemble, quorum in ((3, 2), (5, 3), (4, 4), (3, 1)):
        for first, last in ((0, 29), (7, 7), (5, 41), (10, 9)):
            for index in range(ensemble):
                brute = sum(1 for e in range(first, last + 1) if (index - e) % ensemble < quorum)
                assert entries_on(index, first, last, ensemble, quorum) == brute


async def test_rest_only_audit_of_apache_bookkeeper_bookies(cluster_factory: Any, spark: Any, tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 3, http=True, gcWaitTime=3_600_000)
    ids = cluster.bookie_ids
    store = MetadataStore(cluster.zk_connect, cluster.ledgers_root, session_timeout_ms=6000)
    await store.connect()
    placed: dict[str, int] = dict.fromkeys(ids, 0)
    try:
        conns = {b: await raw.RawConnection.open(b) for b in ids}
        try:
            for lid in (*KEPT, *DELETED):
                await store.create_ledger_metadata(lid, LedgerMetadata(
                    ensemble_size=3, write_quorum_size=2, ack_quorum_size=2, ensembles={0: tuple(ids)},
                    state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=PAYLOAD * ENTRIES,
                    digest_type=DigestType.CRC32C, password=raw.PASSWORD))
                for e in range(ENTRIES):
                    body = raw.entry(lid, e, bytes([e]) * PAYLOAD)
                    for i in range(2):
                        bookie = ids[(e + i) % 3]
                        assert (await conns[bookie].add(lid, e, body=body)).status == 0
                        if lid in KEPT:
                            placed[bookie] += 1
        finally:
            for c in conns.values():
                await c.close()
        for lid in DELETED:
            await store.delete_ledger_metadata(lid)
        await store.mark_ledger_underreplicated(KEPT[0], [ids[2]])
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()

    targets = [RestBookie.parse(b.http_url) for b in cluster.bookies]  # ids found by host among the registered
    opts = AuditOptions(logs=[], metadata=str(tmp_path / "snap"), out=str(tmp_path / "out"), rest_bookies=targets)
    summary = await asyncio.to_thread(run_audit, spark, opts)

    rows = {r["bookie"]: r for r in pq.read_table(tmp_path / "out" / "rest_bookies.parquet").to_pylist()}
    assert sorted(rows) == sorted(ids) == summary.bookies
    stored = len(raw.entry(1, 0, bytes(PAYLOAD))) + ef.RECORD_SIZE_PREFIX
    for b in cluster.bookies:
        row = rows[b.bookie_id]
        assert row["error"] is None
        logs = [p for p in (b.data_dir / "ledgers" / "current").glob("*.log")]
        assert row["entry_logs"] == len(logs)
        assert row["ledgers"] == len(KEPT) and row["open_ledgers"] == 0
        assert row["expected_entries"] == placed[b.bookie_id]
        assert row["expected_bytes"] == placed[b.bookie_id] * stored
        assert 0 < row["disk_used_bytes"] <= row["disk_total_bytes"]
        assert row["unexplained_bytes"] == max(0, row["disk_used_bytes"] - row["expected_bytes"])
        assert row["underreplicated_ledgers"] == (1 if b.bookie_id == ids[2] else 0)
    assert summary.totals["underreplicated_marks"] == 1
    assert any("marked under-replicated" in f for f in summary.findings)
    report = (tmp_path / "out" / "report.html").read_text()
    assert "Bookies known by their REST API only" in report and ids[0] in report
