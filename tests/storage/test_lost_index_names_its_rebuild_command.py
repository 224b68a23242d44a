"""A ledger directory whose entry logs lost one of the two RocksDB indexes is refused at start, and the refusal
names Apache BookKeeper's command that rebuilds that index (the ledgers index and the location index each have
their own); with both lost, both commands."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookie.storage import index_format
from bookie.storage.index_format import IncompatibleDiskError, check_takeover


def _directory(tmp_path: Path, *indexes: str) -> Path:
    current = tmp_path / "current"
    current.mkdir()
    (current / "0.log").write_bytes(b"\0" * 1024)  # an entry log: the indexes must say where its entries are
    (current / "VERSION").write_text("2\n")
    for name in indexes:
        index_format.open_db(current / name).close()
    return tmp_path


@pytest.mark.parametrize(("left", "command"), [
    (("locations",), "`bookkeeper shell rebuild-db-ledgers-index`"),
    (("ledgers",), "`bookkeeper shell rebuild-db-ledger-locations-index`"),
])
def test_one_lost_index_is_named_with_its_rebuild_command(tmp_path: Path, left: tuple[str, ...],
                                                          command: str) -> None:
    directory = _directory(tmp_path, *left)
    with pytest.raises(IncompatibleDiskError) as refused:
        check_takeover(directory, directory)
    assert command in str(refused.value) and "rebuild-db" in str(refused.value)
    assert str(refused.value).count("rebuild-db") == 1, "only the lost index's command"


def test_both_lost_name_both_commands(tmp_path: Path) -> None:
    directory = _directory(tmp_path)
    with pytest.raises(IncompatibleDiskError) as refused:
        check_takeover(directory, directory)
    assert all(f"`{c}`" in str(refused.value) for c in index_format.REBUILD_COMMANDS.values())
