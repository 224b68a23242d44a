"""A live bookie that holds no entry log (a new, empty one, as after a disk was replaced) is still read by the audit
through its admin API: the replicas metadata places there are counted missing, so an entry with no replica left is
data loss (``missing``) and one with too few replicas is ``under``, never ``unverified`` as for a bookie whose logs
were not given."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_audit import bookie_http
from bookie_audit.files import LogInput, discover
from bookie_audit.run import AuditOptions, run_audit
from bookie_audit.snapshot import export_snapshot

from tests.support.admin_api import TEST_ADMIN_TOKEN

raw = importlib.import_module("tests.support.raw_client")

UNDER = 1        # ensemble of the three bookies, write quorum 3: written to the first two only
LOST = 2         # ensemble of the empty bookie alone: written nowhere
ENTRIES = 5


async def _create(store: MetadataStore, lid: int, ensemble: list[str]) -> None:
    await store.create_ledger_metadata(lid, LedgerMetadata(
        ensemble_size=len(ensemble), write_quorum_size=len(ensemble), ack_quorum_size=len(ensemble),
        ensembles={0: tuple(ensemble)}, state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0,
        digest_type=DigestType.CRC32C, password=raw.PASSWORD))


async def test_an_empty_bookies_missing_replicas_are_not_unverified(bookie_factory: Any, spark: Any,
                                                                    tmp_path: Path) -> None:
    bs = bookie_factory(3)
    empty = bs.ids[2]
    store = MetadataStore(bs.zk_connect, bs.ledgers_root, session_timeout_ms=6000)
    await store.connect()
    try:
        await _create(store, UNDER, bs.ids)
        await _create(store, LOST, [empty])
        for b in bs.ids[:2]:
            conn = await raw.RawConnection.open(b)
            try:
                for e in range(ENTRIES):
                    assert (await conn.add(UNDER, e, body=raw.entry(UNDER, e, b"payload"))).status == 0
            finally:
                await conn.close()
        await asyncio.to_thread(lambda: [b.restart() for b in bs.bookies[:2]])  # the entries into entry logs
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()

    token = tmp_path / "admin-token"
    token.write_text(TEST_ADMIN_TOKEN + "\n")
    bookie_http.configure(str(token))
    roots = [f"bookie+{b.http_url}" for b in bs.bookies]
    logs = await asyncio.to_thread(discover, [LogInput(r) for r in roots])
    assert empty not in {log.bookie for log in logs}, "the third bookie holds no entry log"

    opts = AuditOptions(logs=[LogInput(r) for r in roots], metadata=str(tmp_path / "snap"), out=str(tmp_path / "out"),
                        min_age_days=0, bookie_token_file=str(token))
    summary = await asyncio.to_thread(run_audit, spark, opts)
    rows = {r["ledger_id"]: r for r in pq.read_table(tmp_path / "out" / "replication_ledgers.parquet").to_pylist()}
    assert {lid: (r["under"], r["missing"], r["unverified"]) for lid, r in rows.items()} == {
        UNDER: (ENTRIES, 0, 0), LOST: (0, ENTRIES, 0)}, rows
    assert summary.replication.get("missing") == ENTRIES and "unverified" not in summary.replication
    assert summary.bookies == sorted(bs.ids), "the empty bookie was read"
