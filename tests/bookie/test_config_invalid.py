"""An invalid configuration stops `bookie serve` before it touches anything: exit code 2 and a message naming
the key and the allowed values. A misspelt key is refused, never ignored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def serve(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    conf = tmp_path / "bookie.conf"
    conf.write_text("\n".join([
        "# a bookie that must not start",
        f"journalDirectories={tmp_path / 'journal'}",
        f"ledgerDirectories={tmp_path / 'ledgers'}",
        "metadataServiceUri=zk+hierarchical://127.0.0.1:1/ledgers",
        *lines,
    ]) + "\n")
    return subprocess.run([sys.executable, "-m", "bookie.cli", "serve", "--conf", str(conf)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("lines", "expected"), [
    (["jornalMaxGroupWaitMSec=1"],
     "jornalMaxGroupWaitMSec: unknown configuration key (did you mean journalMaxGroupWaitMSec?)"),
    (["diskUsageThreshold=1.5"], "diskUsageThreshold: Input should be less than 1 (got '1.5'; "
                                 "allowed: 0 < diskUsageThreshold < 1)"),
    (["diskUsageWarnThreshold=0"], "allowed: 0 < diskUsageWarnThreshold < 1"),
    (["diskUsageThreshold=0.8", "diskUsageWarnThreshold=0.7", "diskUsageLwmThreshold=0.85"],
     "diskUsageLwmThreshold must be <= diskUsageThreshold (got 0.85 > 0.8)"),
    (["minorCompactionThreshold=0.8", "majorCompactionThreshold=0.8"],
     "minorCompactionThreshold must be < majorCompactionThreshold (got 0.8 >= 0.8)"),
    (["bookiePort=70000"], "allowed: 0 <= bookiePort <= 65535"),
    (["journalSyncData=maybe"], "journalSyncData: Input should be a valid boolean"),
    (["metadataServiceUri=http://127.0.0.1:2181/ledgers"],
     "metadataServiceUri: expected zk+hierarchical://host:port[;host:port]/ledgers"),
    (["ledgerStorageClass=org.apache.bookkeeper.bookie.SortedLedgerStorage"],
     "ledgerStorageClass: this bookie implements "
     "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage only"),
])
def test_invalid_configuration_stops_start_up(tmp_path: Path, lines: list[str], expected: str) -> None:
    result = serve(tmp_path, lines)
    assert result.returncode == 2, result.stderr
    assert f"invalid bookie configuration in {tmp_path / 'bookie.conf'}" in result.stderr
    assert expected in result.stderr
    assert not (tmp_path / "journal").exists() and not (tmp_path / "ledgers").exists()


def test_every_problem_is_named_at_once(tmp_path: Path) -> None:
    result = serve(tmp_path, ["ledgerDirectorys=/data", "diskCheckInterval=-1"])
    assert result.returncode == 2
    assert "ledgerDirectorys: unknown configuration key (did you mean ledgerDirectories" in result.stderr
    assert "diskCheckInterval: Input should be greater than 0" in result.stderr


def test_a_key_without_a_value_is_refused_by_name(tmp_path: Path) -> None:
    # Java properties read a lone key as an empty value; an empty port is not a port.
    result = serve(tmp_path, ["bookiePort"])
    assert result.returncode == 2
    assert "bookiePort: Input should be a valid integer" in result.stderr


def test_a_bad_escape_is_refused_naming_the_file(tmp_path: Path) -> None:
    result = serve(tmp_path, ["advertisedAddress=\\u12"])
    assert result.returncode == 2
    assert f"{tmp_path / 'bookie.conf'}: not a Java properties file: Invalid \\u escape sequence" in result.stderr


def test_missing_configuration_file(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "bookie.cli", "serve", "--conf", str(tmp_path / "nope.conf")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"cannot read configuration file {tmp_path / 'nope.conf'}" in result.stderr
