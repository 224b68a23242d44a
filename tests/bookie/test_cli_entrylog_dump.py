"""`bookie entrylog dump` prints a finalized log's header, records and ledgers map; a damaged header is an
error naming the file, never an empty log."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.bookie.conftest import ENTRY_BYTES, StoppedBookie


def dump(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bookie.cli", "entrylog", "dump", *args],
                          capture_output=True, text=True, timeout=60)


def logs(stopped: StoppedBookie) -> list[Path]:
    found = sorted((stopped.bookie.ledger_dir / "current").glob("*.log"))
    assert len(found) >= 2, "logSizeLimit 200000 rolls the log"
    return found


def test_finalized_log_shows_records_and_ledgers_map(stopped_bookie: StoppedBookie) -> None:
    total: dict[int, int] = {}
    for path in logs(stopped_bookie):
        result = dump(str(path))
        assert result.returncode == 0, result.stderr
        out: dict[str, Any] = json.loads(result.stdout)
        assert out["file"] == str(path)
        assert out["header"]["ledgers_map_offset"] > 0 and out["header"]["ledgers_count"] > 0
        records = out["records"]
        by_ledger: dict[int, int] = {}  # BookKeeper counts each record with its 4-byte size
        for record in records:
            by_ledger[record["ledger"]] = by_ledger.get(record["ledger"], 0) + record["size"] + 4
            total[record["ledger"]] = total.get(record["ledger"], 0) + 1
        assert {int(k): v for k, v in out["ledgers_map"].items()} == by_ledger
    assert total == {ledger: 40 for ledger in stopped_bookie.ledgers}


def test_map_only_and_limit(stopped_bookie: StoppedBookie) -> None:
    path = logs(stopped_bookie)[0]
    out = json.loads(dump(str(path), "--map-only").stdout)
    assert "records" not in out and out["ledgers_map"]
    limited = json.loads(dump(str(path), "--limit", "3").stdout)
    assert len(limited["records"]) == 3
    assert all(r["size"] > ENTRY_BYTES for r in limited["records"])  # 32-byte header + digest + payload


def test_corrupt_header_is_an_error_naming_the_file(stopped_bookie: StoppedBookie, tmp_path: Path) -> None:
    copy = tmp_path / logs(stopped_bookie)[0].name
    shutil.copy(logs(stopped_bookie)[0], copy)
    with open(copy, "r+b") as f:
        f.write(b"XXXX")  # the BKLO magic
    result = dump(str(copy))
    assert result.returncode == 1
    assert f"bookie: {copy}: error" in result.stderr and "magic" in result.stderr
    out = json.loads(result.stdout)
    assert "error" in out and "records" not in out and "ledgers_map" not in out
