"""Old journal files are removed off the checkpoint, in steps: a file of gigabytes freed in one go holds every
fsync of its disk (every journal there stops acknowledging adds) for as long as the file system takes to free
it, and a checkpoint that waited for it would leave adds waiting for room in a full write cache meanwhile."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from bookie.storage import gradual_removal
from bookie.storage import journal as journal_module
from bookie.storage.gradual_removal import remove_in_steps

from tests.support.raw_client import MASTER_KEY, entry

MIB = 2**20


def _sparse_file(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk (all hole): its length is all the removal looks at."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _recording_truncates(monkeypatch: pytest.MonkeyPatch, after_each: Any = None) -> list[int]:
    sizes: list[int] = []
    real = os.ftruncate

    def ftruncate(fd: int, size: int) -> None:
        real(fd, size)
        sizes.append(size)
        if after_each is not None:
            after_each()

    monkeypatch.setattr(gradual_removal.os, "ftruncate", ftruncate)
    return sizes


def test_a_file_is_shortened_from_its_end_a_step_at_a_time_then_unlinked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doomed = _sparse_file(tmp_path / "a.txn", 10 * MIB + 12345)
    sizes = _recording_truncates(monkeypatch)
    assert remove_in_steps(doomed, threading.Event(), step_bytes=2 * MIB, pause_s=0)
    assert sizes == [10 * MIB + 12345 - k * 2 * MIB for k in range(1, 6)], "the last step leaves 12345 B"
    assert not doomed.exists()


def test_a_stop_leaves_the_file_in_place_shorter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doomed = _sparse_file(tmp_path / "a.txn", 10 * MIB)
    stop = threading.Event()
    _recording_truncates(monkeypatch, after_each=stop.set)
    assert not remove_in_steps(doomed, stop, step_bytes=2 * MIB, pause_s=0)
    assert doomed.stat().st_size == 8 * MIB, "one step taken, then the stop was seen"


def test_a_file_with_another_name_is_unlinked_with_its_content_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doomed = tmp_path / "a.txn"
    doomed.write_bytes(b"j" * (3 * MIB))
    kept = tmp_path / "corrupt-a.txn"  # a damaged journal kept for its operator is a hard link
    os.link(doomed, kept)
    sizes = _recording_truncates(monkeypatch)
    assert remove_in_steps(doomed, threading.Event(), step_bytes=MIB, pause_s=0)
    assert not doomed.exists() and sizes == []
    assert kept.read_bytes() == b"j" * (3 * MIB)


def test_a_missing_file_is_already_removed_and_a_bad_step_is_refused(tmp_path: Path) -> None:
    assert remove_in_steps(tmp_path / "gone.txn", threading.Event())
    with pytest.raises(ValueError, match="step_bytes must be positive"):
        remove_in_steps(tmp_path / "gone.txn", threading.Event(), step_bytes=0)


async def test_the_checkpoint_returns_while_old_journals_are_still_being_removed(
        engines: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    removed_on: list[str] = []

    def held_removal(path: Path, stop: threading.Event, **_: Any) -> bool:
        release.wait(60)
        removed_on.append(threading.current_thread().name)
        path.unlink(missing_ok=True)
        return True

    monkeypatch.setattr(journal_module, "remove_in_steps", held_removal)
    engine = await engines(journalMaxSizeMB=1, journalMaxBackups=0, journalPreAllocSizeMB=1)
    for i in range(60):
        await engine.add_entry(entry(1, i, b"x" * 50_000), MASTER_KEY)
    journal_dir = tmp_path / "journal" / "current"
    before = len(list(journal_dir.glob("*.txn")))
    assert before > 2, "the journal rolled at journalMaxSizeMB"
    # A checkpoint that waited for the removal would wait for ``release``, which is set only after it returned.
    await asyncio.wait_for(engine.checkpoint(), 60)
    assert len(list(journal_dir.glob("*.txn"))) == before, "nothing removed yet: the removal is held"
    await asyncio.wait_for(engine.checkpoint(), 60)  # a second mark while the first removal runs queues nothing
    release.set()
    for _ in range(600):
        if len(list(journal_dir.glob("*.txn"))) == 1:
            break
        await asyncio.sleep(0.05)
    assert len(list(journal_dir.glob("*.txn"))) == 1, "every file before the mark removed (journalMaxBackups=0)"
    assert removed_on and all(name.startswith("journal-removal") for name in removed_on), removed_on
    assert (await engine.read_entry(1, 0)) == entry(1, 0, b"x" * 50_000)


async def test_closing_stops_a_removal_in_steps_and_the_next_start_finishes_it(
        engines: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "remove_in_steps",
                        lambda path, stop: remove_in_steps(path, stop, step_bytes=64 * 1024, pause_s=0.5))
    engine = await engines(journalMaxSizeMB=1, journalMaxBackups=0, journalPreAllocSizeMB=1)
    for i in range(60):
        await engine.add_entry(entry(1, i, b"x" * 50_000), MASTER_KEY)
    journal_dir = tmp_path / "journal" / "current"
    await engine.checkpoint()
    await engine.close()  # the removal (0.5 s per 64 KiB step) is under way: close stops it after one step
    left = sorted(journal_dir.glob("*.txn"))
    assert len(left) > 2, "the removal was stopped, not waited for"
    monkeypatch.undo()
    engine = await engines(journalMaxSizeMB=1, journalMaxBackups=0, journalPreAllocSizeMB=1)
    await engine.add_entry(entry(1, 60, b"y"), MASTER_KEY)
    await engine.checkpoint()
    for _ in range(600):
        if not any(p.exists() for p in left):
            break
        await asyncio.sleep(0.05)
    assert not any(p.exists() for p in left), "the files the stopped removal left are removed after a restart"
    assert (await engine.read_entry(1, 0)) == entry(1, 0, b"x" * 50_000)
