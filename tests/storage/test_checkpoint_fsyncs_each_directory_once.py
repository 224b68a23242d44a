"""A checkpoint makes the names it wrote durable with one fsync per directory: the journal mark and the two
indexes' sequence files are renamed into a ledger directory's ``current/`` and that directory is fsynced once,
after the last of them (a slow ledger device pays for every sync, docs/reliability.md). With the indexes in a
directory of their own, that one is fsynced once too.

``durable.stage_file`` (the renames) and ``durable.fsync_dir`` are observed (wrapped, still called) to see which
directory each rename and fsync touched, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.storage import durable
from bookie.storage.engine import StorageEngine

from tests.support.raw_client import MASTER_KEY, entry

Steps = list[tuple[str, Path]]


def _observe(monkeypatch: pytest.MonkeyPatch) -> Steps:
    steps: Steps = []
    real_stage, real_fsync_dir = durable.stage_file, durable.fsync_dir

    def stage_file(path: Path, data: bytes) -> None:
        steps.append(("rename", path.parent))
        real_stage(path, data)

    def fsync_dir(path: Path) -> None:
        steps.append(("fsync", path))
        real_fsync_dir(path)

    monkeypatch.setattr(durable, "stage_file", stage_file)
    monkeypatch.setattr(durable, "fsync_dir", fsync_dir)
    return steps


async def _checkpoint_of_a_new_ledger(engine: StorageEngine, monkeypatch: pytest.MonkeyPatch) -> Steps:
    """A checkpoint after a first one (which created the entry log): a new ledger's entry, so both indexes
    change, and the steps it took."""
    await engine.add_entry(entry(1, 0, b"first"), MASTER_KEY)
    await engine.checkpoint()
    await engine.add_entry(entry(2, 0, b"a new ledger"), MASTER_KEY)
    steps = _observe(monkeypatch)
    await engine.checkpoint()
    return steps


def _renamed_then_fsynced_once(steps: Steps, directory: Path, renames: int) -> None:
    assert [kind for kind, where in steps if where == directory] == ["rename"] * renames + ["fsync"], steps


async def test_the_mark_and_both_sequence_files_share_one_fsync(
        engines: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    engine = await engines()
    current = engine.dirs[0].current
    steps = await _checkpoint_of_a_new_ledger(engine, monkeypatch)
    _renamed_then_fsynced_once(steps, current, renames=3)  # locations.sequence, ledgers.sequence, lastMark
    assert sum(kind == "fsync" for kind, _ in steps) == 1, steps
    for index in (engine.dirs[0].locations, engine.dirs[0].ledger_index):
        assert int(index.sequence_file.read_text()) == index.db.latest_sequence_number()
    assert (current / "lastMark").stat().st_size == 16


async def test_indexes_in_their_own_directory_get_one_fsync_of_it(
        engines: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    engine = await engines(indexDirectories=str(tmp_path / "index"))
    directory = engine.dirs[0]
    assert directory.index_current != directory.current
    steps = await _checkpoint_of_a_new_ledger(engine, monkeypatch)
    _renamed_then_fsynced_once(steps, directory.index_current, renames=2)
    _renamed_then_fsynced_once(steps, directory.current, renames=1)


async def test_a_checkpoint_with_no_index_change_fsyncs_only_the_marks_directory(
        engines: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    engine = await engines(indexDirectories=str(tmp_path / "index"))
    await engine.add_entry(entry(1, 0, b"first"), MASTER_KEY)
    await engine.checkpoint()
    steps = _observe(monkeypatch)
    await engine.checkpoint()
    assert steps == [("rename", engine.dirs[0].current), ("fsync", engine.dirs[0].current)]
