"""The entrylog data source in scan mode: every record, its entry header and digest, split by offset ranges."""

from __future__ import annotations

from collections import Counter
from typing import Any


def _scan(spark: Any, fleet: Any, split: int | None = None) -> Any:
    reader = spark.read.format("entrylog").option("mode", "scan").option("digests", fleet.snapshot_dir)
    if split is not None:
        reader = reader.option("splitBytes", str(split))
    return reader.load(fleet.fleet.root)


def test_every_stored_copy_is_one_row_with_a_good_digest(spark: Any, fleet: Any) -> None:
    rows = _scan(spark, fleet).filter("status = 'ok'").collect()
    got = Counter((r.bookie, r.ledger_id, r.entry_id, r.size) for r in rows)
    assert got == Counter((c.bookie, c.ledger_id, c.entry_id, c.size) for c in fleet.fleet.copies())
    assert {(r.digest, r.checksum_ok) for r in rows} == {("crc32c", True)}
    assert all(r.lac == r.entry_id - 1 for r in rows)


def test_offset_range_splits_give_the_same_rows_as_whole_logs(spark: Any, fleet: Any) -> None:
    whole = _scan(spark, fleet)
    split = _scan(spark, fleet, split=2048)
    assert split.rdd.getNumPartitions() > 3 * whole.rdd.getNumPartitions()
    cols = ["path", "offset", "size", "ledger_id", "entry_id", "status", "checksum_ok"]
    assert sorted(split.select(cols).collect()) == sorted(whole.select(cols).collect())


def test_without_a_snapshot_crc_digests_are_recognised(spark: Any, fleet: Any) -> None:
    df = spark.read.format("entrylog").option("mode", "scan").load(fleet.fleet.root)
    got = {(r.digest, r.checksum_ok) for r in df.filter("status = 'ok'").select("digest", "checksum_ok").collect()}
    assert got == {("crc32c", True)}


def test_truncated_tail_is_one_flagged_row(spark: Any, fleet: Any) -> None:
    (log,) = [lg for lg in fleet.fleet.logs if lg.truncated]
    bad = _scan(spark, fleet, split=2048).filter("status != 'ok'").collect()
    assert [(r.path, r.status) for r in bad] == [(log.path, "truncated")]
    import os

    assert bad[0].offset + bad[0].size == os.path.getsize(log.path)
