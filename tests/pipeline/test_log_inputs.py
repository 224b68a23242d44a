"""Which files are entry logs and whose: explicit ids, cookies, fleet roots; RocksDB WALs are not logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookie.metadata.cookie import Cookie
from bookie.storage import entrylog_format as ef
from bookie_audit.files import AuditInputError, LogInput, discover


def _log(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ef.LogHeader().encode())


def test_parse_explicit_bookie_ids_and_plain_paths() -> None:
    assert LogInput.parse("10.0.0.1:3181=/data/b1") == LogInput("/data/b1", "10.0.0.1:3181")
    assert LogInput.parse("/data/b1") == LogInput("/data/b1")
    assert LogInput.parse("s3://bucket/x?a=b") == LogInput("s3://bucket/x?a=b")


def test_bookie_ids_from_cookie_folder_or_explicit(tmp_path: Path) -> None:
    _log(tmp_path / "fleet" / "b1" / "current" / "a.log")
    cookie = Cookie.generate("10.0.0.2:3181", ["/j"], [str(tmp_path / "fleet" / "b2")])
    (tmp_path / "fleet" / "b2" / "current").mkdir(parents=True)
    (tmp_path / "fleet" / "b2" / "current" / "VERSION").write_text(cookie.render())
    _log(tmp_path / "fleet" / "b2" / "current" / "1f.log")
    _log(tmp_path / "solo" / "current" / "0.log")
    found = discover([LogInput(str(tmp_path / "fleet")), LogInput(str(tmp_path / "solo")),
                      LogInput(str(tmp_path / "solo" / "current" / "0.log"), "named:1")])
    got = {(f.bookie, f.log_id) for f in found}
    assert got == {("b1", 0xA), ("10.0.0.2:3181", 0x1F), ("named:1", 0)}


def test_rocksdb_wal_files_and_other_names_are_not_entry_logs(tmp_path: Path) -> None:
    _log(tmp_path / "b" / "current" / "3.log")
    _log(tmp_path / "b" / "current" / "ledgers" / "000004.log")
    _log(tmp_path / "b" / "current" / "locations" / "000009.log")
    _log(tmp_path / "b" / "current" / "5.log.compacting")
    _log(tmp_path / "b" / "current" / "bookie.txt")
    assert [f.log_id for f in discover([LogInput(str(tmp_path))])] == [3]


def test_no_logs_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AuditInputError, match="no entry logs"):
        discover([LogInput(str(tmp_path))])
    with pytest.raises(AuditInputError, match="no entry-log input"):
        discover([])
