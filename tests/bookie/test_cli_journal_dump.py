"""`bookie journal dump` prints a journal's header and its add records; a file that is not a journal is an
error naming it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.bookie.conftest import ENTRIES, StoppedBookie


def dump(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bookie.cli", "journal", "dump", *args],
                          capture_output=True, text=True, timeout=60)


def journals(stopped: StoppedBookie) -> list[Path]:
    found = sorted((stopped.bookie.journal_dir / "current").glob("*.txn"))
    assert found
    return found


def test_journal_records_of_every_add(stopped_bookie: StoppedBookie) -> None:
    adds: dict[int, set[int]] = {}
    for path in journals(stopped_bookie):
        result = dump(str(path))
        assert result.returncode == 0, result.stderr
        header, *records = _objects(result.stdout)
        assert header["file"] == str(path) and header["format_version"] in (5, 6)
        for record in records:
            if record["kind"] == "entry":
                adds.setdefault(record["ledger"], set()).add(record["entry"])
    for ledger in stopped_bookie.ledgers:
        assert adds[ledger] == set(range(ENTRIES))


def test_limit(stopped_bookie: StoppedBookie) -> None:
    result = dump(str(journals(stopped_bookie)[0]), "--limit", "2")
    assert len(_objects(result.stdout)) == 2


def test_not_a_journal_is_an_error_naming_the_file(stopped_bookie: StoppedBookie, tmp_path: Path) -> None:
    copy = tmp_path / "1.txn"
    shutil.copy(journals(stopped_bookie)[0], copy)
    with open(copy, "r+b") as f:
        f.write(b"NOPE")
    result = dump(str(copy))
    assert result.returncode == 1
    assert f"bookie: {copy}: journal corrupt at offset 0" in result.stderr


def _objects(text: str) -> list[dict[str, Any]]:
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        value, i = decoder.raw_decode(text, i)
        out.append(value)
    return out
