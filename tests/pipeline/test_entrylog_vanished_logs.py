"""A log deleted between the listing and its reading (GC of a live bookie audited in place or through its admin
API) gives one ``vanished`` row in each reading, never a failed task; the other logs are read as usual."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from bookie.protocol import entry as bke
from bookie.storage import entrylog_format as ef
from bookie_audit import scan
from bookie_audit.files import LogInput, discover

_CRC = bke.digest_manager(bke.DigestType.CRC32C)


def _write_log(path: Path, ledger: int, records: int) -> None:
    body = bytearray(ef.LogHeader().encode())
    sizes: dict[int, int] = {}
    for e in range(records):
        entry = bke.package_entry(_CRC, ledger, e, e - 1, 50 * (e + 1), bytes([e]) * 50)
        body += ef.encode_record(ledger, e, entry)
        sizes[ledger] = sizes.get(ledger, 0) + len(entry) + 4
    offset = len(body)
    body += ef.encode_ledgers_map(sizes)
    body[8:20] = ef.encode_map_location(offset, 1)
    path.write_bytes(body)


def _rows(batches: list[pa.RecordBatch]) -> list[dict[str, object]]:
    return pa.Table.from_batches(batches).to_pylist() if batches else []


def test_a_log_deleted_after_listing_is_a_vanished_row(tmp_path: Path) -> None:
    (tmp_path / "b1").mkdir()
    _write_log(tmp_path / "b1" / "0.log", 7, 10)
    _write_log(tmp_path / "b1" / "1.log", 8, 10)
    logs = discover([LogInput(str(tmp_path / "b1"), "b1")])
    (tmp_path / "b1" / "0.log").unlink()  # GC got there first

    meta = _rows(list(scan.ledger_rows(logs)))
    gone = [r for r in meta if r["log_id"] == 0]
    assert [(r["status"], r["source"], r["ledger_id"]) for r in gone] == [("vanished", "file", None)]
    assert "deleted since it was listed" in str(gone[0]["error"])
    assert {(r["log_id"], r["ledger_id"], r["status"]) for r in meta if r["log_id"] == 1} == {(1, 8, "ok")}

    gone_log = next(log for log in logs if log.log_id == 0)
    first = _rows(list(scan.record_rows(gone_log, 0, 2048)))
    assert [(r["status"], r["offset"], r["size"]) for r in first] == [("vanished", 0, gone_log.size)]
    assert _rows(list(scan.record_rows(gone_log, 2048, gone_log.size))) == [], "one row per log, not per range"
    kept = next(log for log in logs if log.log_id == 1)
    assert [r["entry_id"] for r in _rows(list(scan.record_rows(kept, 0, kept.size)))] == list(range(10))
