"""The audit of entry logs written by real bookie processes, ours (``bookie serve``) and Apache BookKeeper's,
with known deletions and a deliberately under-replicated ledger; every number is computed from what the test
sent."""

from __future__ import annotations

import asyncio
import importlib
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_audit.files import LogInput
from bookie_audit.run import AuditOptions, run_audit
from bookie_audit.snapshot import export_snapshot

raw = importlib.import_module("tests.support.raw_client")

HEALTHY = (1, 2, 3, 4)
DELETED = (5, 6)
UNDER = 7  # write quorum 3, but the third bookie never got entries 0-9
ENTRIES = 30


async def _write_delete_stop_and_audit(spark: Any, tmp_path: Path, ids: list[str], ledger_dirs: list[Path],
                                       zk: str, root: str, stop: Any) -> None:
    rng = random.Random(3)
    on_disk: dict[tuple[str, int], int] = {}  # (bookie, ledger) -> bytes as in a ledgers map
    store = MetadataStore(zk, root, session_timeout_ms=6000)
    await store.connect()
    conns = {b: await raw.RawConnection.open(b) for b in ids}
    try:
        for lid in (*HEALTHY, *DELETED, UNDER):
            wq = 3 if lid == UNDER else 2
            md = LedgerMetadata(ensemble_size=3, write_quorum_size=wq, ack_quorum_size=wq, ensembles={0: tuple(ids)},
                                state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0,
                                digest_type=DigestType.CRC32C, password=raw.PASSWORD,
                                custom_metadata={"pulsar/managed-ledger": f"topic-{lid}".encode()})
            await store.create_ledger_metadata(lid, md)
            for e in range(ENTRIES):
                body = raw.entry(lid, e, rng.randbytes(rng.randint(100, 3000)))
                for i in range(wq):
                    b = ids[(e + i) % 3]
                    if lid == UNDER and b == ids[2] and e < 10:
                        continue
                    resp = await conns[b].add(lid, e, body=body)
                    assert resp.status == 0, (b, lid, e, resp)
                    on_disk[(b, lid)] = on_disk.get((b, lid), 0) + len(body) + 4
        for lid in DELETED:
            await store.delete_ledger_metadata(lid)
    finally:
        for c in conns.values():
            await c.close()
    await asyncio.to_thread(stop)  # graceful: checkpoint, entry logs on disk
    try:
        manifest = await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()
    assert manifest.ledgers == len(HEALTHY) + 1

    out = tmp_path / "out"
    opts = AuditOptions(logs=[LogInput(str(d)) for d in ledger_dirs], metadata=str(tmp_path / "snap"),
                        out=str(out), min_age_days=0)
    summary = run_audit(spark, opts)

    lm = pq.read_table(out / "ledger_map.parquet").to_pylist()
    got: dict[tuple[str, int], int] = {}
    for r in lm:
        if r["ledger_id"] is not None:
            got[(r["bookie"], r["ledger_id"])] = got.get((r["bookie"], r["ledger_id"]), 0) + r["bytes"]
    assert got == on_disk
    assert summary.bookies == sorted(ids)
    assert summary.totals["total_bytes"] == sum(on_disk.values())
    assert summary.totals["garbage_bytes"] == sum(v for (b, lid), v in on_disk.items() if lid in DELETED)
    assert summary.replication.get("under") == 10 and summary.replication.get("missing", 0) == 0
    assert summary.replication["ok"] == len(HEALTHY) * ENTRIES + ENTRIES - 10
    assert summary.replication["checksum_failures"] == 0
    orphans = {(r["bookie"], r["ledger_id"], r["class"])
               for r in pq.read_table(out / "orphans.parquet").to_pylist()}
    assert orphans == {(b, lid, "deleted") for (b, lid) in on_disk if lid in DELETED}
    problems = pq.read_table(out / "replication_ledgers.parquet").to_pylist()
    assert [(r["ledger_id"], r["under"]) for r in problems if r["under"]] == [(UNDER, 10)]
    assert summary.warnings == [] and summary.totals["flagged"] == 0


async def test_audit_of_logs_written_by_our_bookie_processes(bookie_factory: Any, spark: Any,
                                                             tmp_path: Path) -> None:
    bs = bookie_factory(3, gcWaitTime=3_600_000)

    def stop() -> None:
        for b in bs.bookies:
            b.stop()

    await _write_delete_stop_and_audit(spark, tmp_path, bs.ids, [b.ledger_dir for b in bs.bookies],
                                       bs.zk_connect, bs.ledgers_root, stop)


async def test_audit_of_logs_written_by_apache_bookkeeper_bookies(cluster_factory: Any, spark: Any,
                                                                  tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 3, gcWaitTime=3_600_000)
    await _write_delete_stop_and_audit(spark, tmp_path, cluster.bookie_ids,
                                       [b.data_dir / "ledgers" for b in cluster.bookies],
                                       cluster.zk_connect, cluster.ledgers_root, cluster.stop)
