"""Corrupt and truncated entry logs give flagged rows, never a failed job or silently dropped records."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from bookie.protocol import entry as bke
from bookie.storage import entrylog_format as ef

_CRC = bke.digest_manager(bke.DigestType.CRC32C)


def _log(records: int, ledger: int = 5) -> tuple[bytearray, list[int], dict[int, int]]:
    body = bytearray(ef.LogHeader().encode())
    offsets: list[int] = []
    sizes: dict[int, int] = {}
    for e in range(records):
        entry = bke.package_entry(_CRC, ledger, e, e - 1, 100 * (e + 1), bytes([e]) * 100)
        offsets.append(len(body))
        body += ef.encode_record(ledger, e, entry)
        sizes[ledger] = sizes.get(ledger, 0) + len(entry) + 4
    return body, offsets, sizes


def _finalize(body: bytearray, sizes: dict[int, int], count: int | None = None) -> None:
    offset = len(body)
    body += ef.encode_ledgers_map(sizes)
    body[8:20] = ef.encode_map_location(offset, count if count is not None else len(sizes))


def _scan(spark: Any, path: Path, split: int = 1 << 20) -> list[Any]:
    df = spark.read.format("entrylog").option("mode", "scan").option("splitBytes", str(split)).load(str(path))
    return sorted(df.collect(), key=lambda r: r.offset)


def test_a_corrupt_record_is_flagged_and_the_records_after_it_are_kept(spark: Any, tmp_path: Path) -> None:
    body, offsets, _ = _log(20)
    struct.pack_into(">i", body, offsets[10], -5)
    (tmp_path / "b1").mkdir()
    (tmp_path / "b1" / "0.log").write_bytes(body)
    for split in (1 << 20, 1024):
        rows = _scan(spark, tmp_path, split)
        bad = [r for r in rows if r.status != "ok"]
        assert [(r.status, r.offset, r.size) for r in bad] == [("corrupt", offsets[10], offsets[11] - offsets[10])]
        assert [r.entry_id for r in rows if r.status == "ok"] == [e for e in range(20) if e != 10]


def test_a_damaged_payload_fails_its_checksum_only(spark: Any, tmp_path: Path) -> None:
    body, offsets, _ = _log(8)
    body[offsets[3] + 4 + 60] ^= 0xFF
    (tmp_path / "1.log").write_bytes(body)
    rows = _scan(spark, tmp_path)
    assert [(r.entry_id, r.checksum_ok) for r in rows] == [(e, e != 3) for e in range(8)]


def test_bad_magic_is_flagged_and_records_still_read(spark: Any, tmp_path: Path) -> None:
    body, _, _ = _log(4)
    body[0:4] = b"XXXX"
    (tmp_path / "2.log").write_bytes(body)
    rows = _scan(spark, tmp_path)
    assert rows[0].status == "corrupt" and rows[0].offset == 0 and "magic" in rows[0].error
    assert [r.entry_id for r in rows[1:]] == [0, 1, 2, 3]
    meta = spark.read.format("entrylog").load(str(tmp_path)).collect()
    assert [(r.status, r.source, r.ledger_id) for r in meta] == [("corrupt", "header", None)]


def test_an_inconsistent_ledgers_map_falls_back_to_a_scan(spark: Any, tmp_path: Path) -> None:
    body, _, sizes = _log(6, ledger=9)
    _finalize(body, sizes, count=3)  # header says 3 ledgers, the map holds 1
    (tmp_path / "3.log").write_bytes(body)
    (row,) = spark.read.format("entrylog").load(str(tmp_path)).collect()
    assert (row.source, row.status, row.ledger_id, row.bytes) == ("scan", "corrupt", 9, sizes[9])
    assert "ledgers map" in row.error


def test_a_tiny_file_is_flagged_an_empty_one_is_just_empty(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "4.log").write_bytes(b"BK")
    (tmp_path / "5.log").write_bytes(b"")  # Apache BookKeeper pre-creates the next log, empty
    meta = spark.read.format("entrylog").load(str(tmp_path)).collect()
    assert sorted((r.log_id, r.status, r.source) for r in meta) == [(4, "corrupt", "header"), (5, "ok", "empty")]
    rows = _scan(spark, tmp_path)
    assert [(r.log_id, r.status) for r in rows] == [(4, "corrupt")]
