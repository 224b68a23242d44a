"""The audit reads the entry logs of running bookies through their admin API (``bookie+http://host:port/<ledger
dir>``) and finds there exactly what it finds in a copy of the same disks: every table of a full audit the
same, row for row (ledgers maps in metadata mode; every record in scan mode, logs split into offset ranges,
the active log without a ledgers map scanned), and the bookies named by the bookies themselves."""

from __future__ import annotations

import asyncio
import importlib
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie.storage import entrylog_format as ef
from bookie_audit import bookie_http
from bookie_audit.files import AuditInputError, LogInput, discover
from bookie_audit.run import AuditOptions, Summary, run_audit
from bookie_audit.snapshot import export_snapshot

from tests.pipeline.tables import audit_tables
from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.live_entry_logs import records_on_a_live_disk

raw = importlib.import_module("tests.support.raw_client")

DELETED = (1, 2)
KEPT = (3, 4, 5)
LATE = 6  # written after the restart: in each bookie's active log, which has no ledgers map yet
ENTRIES = 40
SPLIT = 16 << 10


async def _create(store: MetadataStore, lid: int, ids: list[str]) -> None:
    await store.create_ledger_metadata(lid, LedgerMetadata(
        ensemble_size=3, write_quorum_size=2, ack_quorum_size=2, ensembles={0: tuple(ids)},
        state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0, digest_type=DigestType.CRC32C,
        password=raw.PASSWORD))


async def _write(ids: list[str], ledgers: tuple[int, ...], rng: random.Random) -> None:
    conns = {b: await raw.RawConnection.open(b) for b in ids}
    try:
        for lid in ledgers:
            for e in range(ENTRIES):
                body = raw.entry(lid, e, rng.randbytes(rng.randint(200, 2000)))
                for i in range(2):
                    resp = await conns[ids[(e + i) % 3]].add(lid, e, body=body)
                    assert resp.status == 0, (lid, e, resp)
    finally:
        for c in conns.values():
            await c.close()


def _records_on_disk(ledger_dir: Path, ledger_id: int) -> int:
    return sum(1 for r in records_on_a_live_disk(ledger_dir) if r.ledger_id == ledger_id)


async def _checkpointed(bs: Any) -> None:
    """Wait until every entry of ``LATE`` is in an entry log (the checkpoint runs every second)."""
    expected = {b.bookie_id: sum(1 for e in range(ENTRIES) if b.bookie_id in
                                 (bs.ids[e % 3], bs.ids[(e + 1) % 3])) for b in bs.bookies}
    for _ in range(300):
        found = await asyncio.to_thread(
            lambda: {b.bookie_id: _records_on_disk(b.ledger_dir, LATE) for b in bs.bookies})
        if found == expected:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"late entries not checkpointed: {found} != {expected}")


def _copy_logs(ledger_dir: Path, to: Path) -> None:
    """What a copy of the disk gives the audit: the cookie and the entry logs, mtimes kept."""
    (to / "current").mkdir(parents=True)
    for path in (ledger_dir / "current").iterdir():
        if path.name == "VERSION" or ef.parse_log_file_name(path.name) is not None:
            shutil.copy2(path, to / "current" / path.name)


async def test_audit_through_bookies_gives_the_tables_of_a_copy(bookie_factory: Any, spark: Any,
                                                                  tmp_path: Path) -> None:
    bs = bookie_factory(3)
    rng = random.Random(11)
    store = MetadataStore(bs.zk_connect, bs.ledgers_root, session_timeout_ms=6000)
    await store.connect()
    try:
        for lid in (*DELETED, *KEPT, LATE):
            await _create(store, lid, bs.ids)
        await _write(bs.ids, (*DELETED, *KEPT), rng)
        for lid in DELETED:
            await store.delete_ledger_metadata(lid)
        await asyncio.to_thread(lambda: [b.restart() for b in bs.bookies])  # finalized logs with ledgers maps
        await _write(bs.ids, (LATE,), rng)
        await _checkpointed(bs)
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()

    copies = {str(tmp_path / "copy" / f"bookie{i}"): f"bookie{i}" for i in range(3)}
    remote = {f"bookie+{b.http_url}{b.ledger_dir}": f"bookie{i}" for i, b in enumerate(bs.bookies)}
    for b, copy in zip(bs.bookies, copies, strict=True):
        await asyncio.to_thread(_copy_logs, b.ledger_dir, Path(copy))

    token = tmp_path / "admin-token"
    token.write_text(TEST_ADMIN_TOKEN + "\n")
    bookie_http.configure()
    with pytest.raises(AuditInputError, match="401"):  # the bookies' logs are for holders of their credential
        await asyncio.to_thread(discover, [LogInput(next(iter(remote)))])
    bookie_http.configure(str(token))
    logs = await asyncio.to_thread(discover, [LogInput(u) for u in remote])
    assert sorted({log.bookie for log in logs}) == sorted(bs.ids), "bookie ids from the bookies' listings"
    assert any(log.size > 2 * SPLIT for log in logs)

    def audit(roots: dict[str, str], name: str) -> tuple[Summary, dict[str, list[str]]]:
        opts = AuditOptions(logs=[LogInput(r) for r in roots], metadata=str(tmp_path / "snap"),
                            out=str(tmp_path / name), min_age_days=0, split_bytes=SPLIT, keep_records=True,
                            bookie_token_file=str(token))
        return run_audit(spark, opts), audit_tables(tmp_path / name, roots)

    _, copy_tables = await asyncio.to_thread(audit, copies, "copy-audit")
    summary, live_tables = await asyncio.to_thread(audit, remote, "live-audit")
    assert live_tables == copy_tables
    sources = set(pq.read_table(tmp_path / "live-audit" / "ledger_map.parquet").column("source").to_pylist())
    assert sources == {"map", "scan"}, "finalized logs by their maps, the active log by a scan"
    assert len(live_tables["records"]) == (len(KEPT) + len(DELETED) + 1) * ENTRIES * 2
    assert summary.bookies == sorted(bs.ids)
    assert summary.totals["garbage_bytes"] > 0 and summary.totals["flagged"] == 0
    assert summary.replication["ok"] == (len(KEPT) + 1) * ENTRIES and summary.replication["checksum_failures"] == 0
