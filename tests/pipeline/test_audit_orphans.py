"""Orphans: ledgers on a bookie's disk that the metadata does not place there."""

from __future__ import annotations

from typing import Any

from bookie_audit import audits
from bookie_audit.scan import LEDGER_DDL
from pyspark.sql import Row


def test_deleted_and_not_in_ensemble_ledgers_are_found_with_their_bytes(classified: Any, fleet: Any) -> None:
    got = {(r.bookie, r.ledger_id): (r["class"], r.bytes, r.logs) for r in audits.orphans(classified).collect()}
    expected: dict[tuple[str, int], list[Any]] = {}
    for log in fleet.fleet.logs:
        for c in log.copies:
            led = fleet.fleet.ledgers[c.ledger_id]
            members = {b for ens in led.ensembles.values() for b in ens}
            if led.in_metadata and log.bookie in members:
                continue
            cls = "not_in_ensemble" if led.in_metadata else "deleted"
            acc = expected.setdefault((log.bookie, c.ledger_id), [cls, 0, set()])
            acc[1] += c.size + 4
            acc[2].add(log.path)
    assert got == {k: (v[0], v[1], len(v[2])) for k, v in expected.items()}
    assert {k for k, v in got.items() if v[0] == "not_in_ensemble"} == {("127.0.0.3:3181", 10)}


def test_ledgers_newer_than_the_snapshot_are_not_called_orphans(spark: Any, snap: Any) -> None:
    m = snap.manifest
    rows = [Row(bookie="b", path="/x/1.log", log_id=1, file_size=100, mtime_ms=m.started_ms - 1000, header_version=1,
                source="map", status="ok", error=None, ledger_id=m.max_ledger_id + 5, bytes=10),
            Row(bookie="b", path="/x/2.log", log_id=2, file_size=100, mtime_ms=m.started_ms + 5000, header_version=1,
                source="map", status="ok", error=None, ledger_id=150, bytes=20),
            Row(bookie="b", path="/x/3.log", log_id=3, file_size=100, mtime_ms=m.started_ms - 1000, header_version=1,
                source="map", status="ok", error=None, ledger_id=150, bytes=30)]
    df = spark.createDataFrame(rows, schema=LEDGER_DDL)
    got = {(r.path, r["class"]) for r in audits.classify(df, snap).collect()}
    assert got == {("/x/1.log", "newer_than_snapshot"), ("/x/2.log", "newer_than_snapshot"),
                   ("/x/3.log", "deleted")}
