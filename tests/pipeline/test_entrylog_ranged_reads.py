"""Logs on a remote file system are read by byte ranges: same rows as the memory-mapped local reading."""

from __future__ import annotations

import functools
from pathlib import Path

import pyarrow as pa
import pytest
from bookie_audit import scan
from bookie_audit.datasource import plan_ranges
from bookie_audit.files import LogInput, LogReader, discover

from tests.pipeline.fleetgen import build


def _rows(root: Path, split: int, ranged: bool) -> list[tuple[object, ...]]:
    reader = functools.partial(LogReader, ranged=ranged)
    out: list[dict[str, object]] = []
    logs = discover([LogInput(str(root))])
    for log, start, end in plan_ranges(logs, split):
        for batch in scan.record_rows(log, start, end, open_reader=reader):
            out += pa.Table.from_batches([batch]).select(["path", "offset", "size", "ledger_id", "entry_id",
                                                          "status", "checksum_ok"]).to_pylist()
    return sorted((tuple(r.values()) for r in out), key=repr)


def test_ranged_reads_give_the_mapped_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(str(tmp_path))
    monkeypatch.setattr(scan, "REMOTE_SLACK", 64)  # windows end inside records: they must be extended
    mapped = _rows(tmp_path, 1 << 30, ranged=False)
    assert len(mapped) > 700
    for split in (1 << 30, 3000):
        assert _rows(tmp_path, split, ranged=True) == mapped


def test_ranged_metadata_mode_gives_the_mapped_rows(tmp_path: Path) -> None:
    build(str(tmp_path))
    logs = discover([LogInput(str(tmp_path))])
    mapped = pa.Table.from_batches(list(scan.ledger_rows(logs))).to_pylist()
    ranged = pa.Table.from_batches(list(scan.ledger_rows(logs, functools.partial(LogReader, ranged=True))))
    assert ranged.to_pylist() == mapped
