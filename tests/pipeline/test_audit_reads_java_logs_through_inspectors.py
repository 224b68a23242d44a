"""Apache BookKeeper's bookies get our answers through inspectors beside them (``bookie inspect serve``): the audit
reads their entry logs through the inspectors and finds exactly what it finds in a copy of the same disks, row for
row, while the bookies keep running; each inspector's explain endpoint lists every log on its bookie's disk with the
audit's figures and names the topic whose ledger pins them, and its /metrics says the same."""

from __future__ import annotations

import asyncio
import collections
import importlib
import json
import random
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie.storage import entrylog_format as ef
from bookie_audit import bookie_http
from bookie_audit.files import LogInput
from bookie_audit.run import AuditOptions, run_audit
from bookie_audit.snapshot import export_snapshot
from bookie_fleet.inspectors import plan_inspectors
from bookie_fleet.processes import start_all, stop_all

from tests.pipeline.tables import audit_tables
from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.live_entry_logs import records_on_a_live_disk

raw = importlib.import_module("tests.support.raw_client")

TOPICS = {1: "persistent://public/default/clicks", 2: "persistent://public/default/views",
          3: "persistent://public/default/orders"}
EXPIRED = (1, 2)
PINNING = 3
ENTRIES = 90
JAVA = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployments run
        "gcWaitTime": 3_600_000,     # the bookies' own GC stays out of the way: the garbage is what is explained
        "flushInterval": 500,         # entries reach the entry logs within a second
        "logSizeLimit": 96 * 1024}    # several finalized logs (with ledgers maps) and an active one per bookie


async def _write_three_topics(store: MetadataStore, ids: list[str], rng: random.Random) -> dict[str, int]:
    """Each topic's ledger on every bookie (1/1/1 per bookie: ensemble 3, write quorum 3), entries interleaved so
    every entry log holds all three; returns the records each bookie must have on disk."""
    for lid, topic in TOPICS.items():
        await store.create_ledger_metadata(lid, LedgerMetadata(
            ensemble_size=3, write_quorum_size=3, ack_quorum_size=3, ensembles={0: tuple(ids)},
            state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0, digest_type=DigestType.CRC32C,
            password=raw.PASSWORD, custom_metadata={"pulsar/managed-ledger": topic.encode()}))
    conns = {b: await raw.RawConnection.open(b) for b in ids}
    try:
        for e in range(ENTRIES):
            for lid in TOPICS:
                body = raw.entry(lid, e, rng.randbytes(rng.randint(300, 2500)))
                for b in ids:
                    resp = await conns[b].add(lid, e, body=body)
                    assert resp.status == 0, (b, lid, e, resp)
    finally:
        for c in conns.values():
            await c.close()
    return {b: ENTRIES * len(TOPICS) for b in ids}


def _entries_on_disk(ledger_dir: Path) -> collections.Counter[tuple[int, int]]:
    """How many records of each (ledger, entry) the bookie's entry logs hold. Counted by entry, not by record: a
    CI-like run found one bookie's logs holding 271 records for its 270 entries, one entry written twice."""
    return collections.Counter((r.ledger_id, r.entry_id) for r in records_on_a_live_disk(ledger_dir))


async def _flushed(ledger_dirs: dict[str, Path], expected: dict[str, int]) -> None:
    found: dict[str, int] = {}
    for _ in range(300):
        on_disk = {b: _entries_on_disk(d) for b, d in ledger_dirs.items()}
        found = {b: len(entries) for b, entries in on_disk.items()}
        if found == expected:
            twice = {b: sorted(k for k, n in entries.items() if n > 1) for b, entries in on_disk.items()}
            print(f"entries written more than once: {twice}")
            return
        await asyncio.sleep(0.2)
    files = {b: sorted(p.name for p in (d / "current").iterdir()) for b, d in ledger_dirs.items()}
    raise AssertionError(f"entries not flushed to the entry logs: {found} != {expected}; files: {files}")


def _copy_logs(ledger_dir: Path, to: Path) -> None:
    (to / "current").mkdir(parents=True)
    for path in (ledger_dir / "current").iterdir():
        if path.name == "VERSION" or ef.parse_log_file_name(path.name) is not None:
            shutil.copy2(path, to / "current" / path.name)


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_java_fleet_audited_and_explained_through_inspectors(cluster_factory: Any, spark: Any,
                                                                   tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 3, **JAVA)
    ids = cluster.bookie_ids
    ledger_dirs = {b.bookie_id: b.data_dir / "ledgers" for b in cluster.bookies}
    rng = random.Random(39)
    print(f"seed 39, bookies {ids}")
    store = MetadataStore(cluster.zk_connect, cluster.ledgers_root, session_timeout_ms=6000)
    await store.connect()
    try:
        expected = await _write_three_topics(store, ids, rng)
        await _flushed(ledger_dirs, expected)
        for lid in EXPIRED:  # the retention of two topics expired: Pulsar deletes their ledgers
            await store.delete_ledger_metadata(lid)
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()

    inspectors = plan_inspectors(cluster.bookies, tmp_path / "inspectors", cluster.zk_connect, cluster.ledgers_root,
                                 admin_token=TEST_ADMIN_TOKEN)
    try:
        await asyncio.to_thread(start_all, inspectors)
        copies = {str(tmp_path / "copy" / f"bookie{i}"): f"bookie{i}" for i in range(3)}
        for b, copy in zip(cluster.bookies, copies, strict=True):
            await asyncio.to_thread(_copy_logs, ledger_dirs[b.bookie_id], Path(copy))
        remote = {f"bookie+{i.http_url}{ledger_dirs[i.bookie_id]}": f"bookie{n}" for n, i in enumerate(inspectors)}

        token = tmp_path / "admin-token"
        token.write_text(TEST_ADMIN_TOKEN + "\n")
        bookie_http.configure(str(token))

        def audit(roots: dict[str, str], name: str) -> dict[str, list[str]]:
            opts = AuditOptions(logs=[LogInput(r) for r in roots], metadata=str(tmp_path / "snap"),
                                out=str(tmp_path / name), min_age_days=0, split_bytes=16 << 10, keep_records=True,
                                bookie_token_file=str(token))
            run_audit(spark, opts)
            return audit_tables(tmp_path / name, roots)

        copy_tables = await asyncio.to_thread(audit, copies, "copy-audit")
        live_tables = await asyncio.to_thread(audit, remote, "live-audit")
        assert live_tables == copy_tables
        sources = set(pq.read_table(tmp_path / "live-audit" / "ledger_map.parquet").column("source").to_pylist())
        # Finalized logs by their maps, the active log by a scan, and the next log BookKeeper preallocates (its
        # header only) as empty.
        assert {"map", "scan"} <= sources <= {"map", "scan", "empty"}, sources

        usage = {(r["bookie"], int(r["log_id"])): r
                 for r in pq.read_table(tmp_path / "copy-audit" / "usage_logs.parquet").to_pylist()}
        for inspector in inspectors:
            await _explains_like_the_audit(inspector, ledger_dirs[inspector.bookie_id], usage)
    finally:
        await asyncio.to_thread(stop_all, inspectors)


async def _explains_like_the_audit(inspector: Any, ledger_dir: Path, usage: dict[tuple[str, int], Any]) -> None:
    status, body = await asyncio.to_thread(_get, f"{inspector.http_url}/api/v1/bookie/entry_logs",
                                           TEST_ADMIN_TOKEN)
    assert status == 200, body
    answer = json.loads(body)
    assert answer["bookieId"] == inspector.bookie_id
    (d,) = answer["ledgerDirs"]
    on_disk = {ef.parse_log_file_name(p.name) for p in (ledger_dir / "current").glob("*.log")}
    logs = {int(e["logId"], 16): e for e in d["entryLogs"]}
    assert set(logs) == on_disk, "every entry log on the disk, finalized or not"
    flushed = [e for e in logs.values() if not e["active"] and e["totalBytes"] > 0]
    assert flushed, "the bookie rolled at least one log"
    for log_id, e in logs.items():
        row = usage[(inspector.bookie_id, log_id)] if (inspector.bookie_id, log_id) in usage else None
        total = row["total_bytes"] if row is not None else 0
        live = row["live_bytes"] if row is not None else 0
        assert (e["totalBytes"], e["remainingBytes"]) == (total, live), (log_id, e, row)
    for e in flushed:
        pins = e["pinningLedgers"]
        assert [(p["ledgerId"], p.get("topic")) for p in pins] == [(PINNING, TOPICS[PINNING])], e
        assert "kept" in e["verdict"] or "compacted" in e["verdict"], e["verdict"]

    garbage = sum(e["totalBytes"] - e["remainingBytes"] for e in flushed)
    for _ in range(100):  # the topic label appears once the background lookup has named it
        status, text = await asyncio.to_thread(_get, f"{inspector.http_url}/metrics")
        series = f'bookie_pinned_garbage_bytes{{ledger="{PINNING}",topic="{TOPICS[PINNING]}"}}'
        if series in text:
            break
        await asyncio.sleep(0.2)
    line = next(ln for ln in text.splitlines() if ln.startswith(series))
    assert float(line.split()[-1]) == garbage
    assert "bookie_ACTIVE_ENTRY_LOG_TOTAL" not in text, "the Java bookie exports BookKeeper's GC gauges itself"
