"""A fence or master key recorded in a ledger directory with no cached entries is synced to that directory's
ledger index before the checkpoint mark moves past its journal record: otherwise, after a power cut (which a
SIGKILL cannot show), the journal would no longer replay it and the ledger would come back unfenced.

The index's real ``sync`` is observed (wrapped, still called) to see the order of the syncs and the mark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bookie.config import BookieConfig
from bookie.storage.engine import StorageEngine

from tests.support.raw_client import MASTER_KEY, entry


async def test_checkpoint_syncs_fences_of_directories_without_entries(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    conf = BookieConfig.from_mapping({"journalDirectories": str(tmp_path / "journal"),
                                      "ledgerDirectories": f"{tmp_path / 'l0'},{tmp_path / 'l1'}",
                                      "flushInterval": 600_000, "journalMaxGroupWaitMSec": 0})
    engine = StorageEngine(conf)
    await engine.start()
    try:
        await engine.add_entry(entry(2, 0, b"x"), MASTER_KEY)  # ledger 2 -> l0, with a cached entry
        await engine.fence(3, MASTER_KEY)  # ledger 3 -> l1: a fence, no entry
        assert engine.dir_of(3) is engine.dirs[1] and not len(engine.dirs[1].write_cache)
        steps: list[str] = []
        index = engine.dirs[1].ledger_index
        real_sync = index.sync

        def sync() -> None:
            steps.append("sync l1")
            real_sync()

        monkeypatch.setattr(index, "sync", sync)
        real_marks = engine._write_marks

        def write_marks(marks: Any) -> None:
            steps.append("marks")
            real_marks(marks)

        monkeypatch.setattr(engine, "_write_marks", write_marks)
        await engine.checkpoint()
        assert "sync l1" in steps and steps.index("sync l1") < steps.index("marks"), steps
    finally:
        await engine.close()
