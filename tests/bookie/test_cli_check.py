"""`bookie check` reads every entry log and journal of a bookie's directories: clean ones pass (exit 0), a
damaged entry-log header is a problem naming the file (exit 1), never an empty log."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.bookie.conftest import StoppedBookie
from tests.support.bookies import BookieSet


def check(conf: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bookie.cli", "check", "--conf", str(conf)],
                          capture_output=True, text=True, timeout=60)


def test_cleanly_stopped_bookie_passes(stopped_bookie: StoppedBookie) -> None:
    result = check(stopped_bookie.bookie.conf_path)
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["problems"] == []
    assert len(report["entry_logs"]) >= 2 and all(log["finalized"] for log in report["entry_logs"])
    assert report["journals"] and all(j["records"] > 0 for j in report["journals"][:1])


def test_running_bookie_passes(bookies: BookieSet) -> None:
    result = check(bookies[0].conf_path)
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["problems"] == []


def test_corrupt_entry_log_header_is_a_problem_naming_the_file(stopped_bookie: StoppedBookie,
                                                               tmp_path: Path) -> None:
    bookie = stopped_bookie.bookie
    journal, ledgers = tmp_path / "journal", tmp_path / "ledgers"
    shutil.copytree(bookie.journal_dir, journal)
    shutil.copytree(bookie.ledger_dir, ledgers)
    damaged = sorted((ledgers / "current").glob("*.log"))[0]
    with open(damaged, "r+b") as f:
        f.write(b"\0\0\0\0")
    conf = tmp_path / "bookie.conf"
    conf.write_text(f"journalDirectories={journal}\nledgerDirectories={ledgers}\n")
    result = check(conf)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    [problem] = report["problems"]
    assert problem.startswith(f"{damaged}: error") and "bad entry log magic" in problem
    [entry] = [log for log in report["entry_logs"] if log["file"] == str(damaged)]
    assert "error" in entry and not entry["finalized"]
