"""The entrylog data source in metadata mode: one row per (log, ledger) with the ledgers map's bytes."""

from __future__ import annotations

from typing import Any

from tests.pipeline.fleetgen import TRUNCATED_GOOD_RECORDS


def test_bytes_per_log_and_ledger_match_what_was_written(ledger_map: Any, fleet: Any) -> None:
    expected: dict[tuple[str, str, int], int] = {}
    for log in fleet.fleet.logs:
        for c in log.copies:
            key = (log.bookie, log.path, c.ledger_id)
            expected[key] = expected.get(key, 0) + c.size + 4
    rows = ledger_map.filter("ledger_id IS NOT NULL").collect()
    got = {(r.bookie, r.path, r.ledger_id): r.bytes for r in rows}
    assert got == expected


def test_finalized_logs_read_from_the_map_others_scanned(ledger_map: Any, fleet: Any) -> None:
    sources = {r.path: (r.source, r.status, r.log_id, r.mtime_ms)
               for r in ledger_map.select("path", "source", "status", "log_id", "mtime_ms").distinct().collect()}
    assert len(sources) == len(fleet.fleet.logs)
    for log in fleet.fleet.logs:
        source, status, log_id, mtime_ms = sources[log.path]
        assert source == ("map" if log.finalized else "scan")
        assert status == ("truncated" if log.truncated else "ok")
        assert log_id == log.log_id and mtime_ms == log.mtime_ms


def test_bookie_comes_from_the_cookie_next_to_the_logs(ledger_map: Any, fleet: Any) -> None:
    got = {r.path: r.bookie for r in ledger_map.select("path", "bookie").distinct().collect()}
    assert got == {log.path: log.bookie for log in fleet.fleet.logs}


def test_truncated_log_keeps_the_records_before_the_cut(ledger_map: Any, fleet: Any) -> None:
    (log,) = [lg for lg in fleet.fleet.logs if lg.truncated]
    rows = ledger_map.filter(ledger_map.path == log.path).collect()
    assert sum(r.bytes for r in rows) == sum(c.size + 4 for c in log.copies)
    assert len(log.copies) == TRUNCATED_GOOD_RECORDS
    assert all("past the end" in r.error for r in rows)
