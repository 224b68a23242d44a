"""`bookie ledger locations` shows where each entry of a ledger lives (entry log and offset), from the index."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.bookie.conftest import ENTRIES, StoppedBookie


def locations(stopped: StoppedBookie, ledger: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bookie.cli", "ledger", "locations", "--conf",
                           str(stopped.bookie.conf_path), str(ledger)], capture_output=True, text=True, timeout=60)


def test_every_entry_points_into_an_entry_log_record(stopped_bookie: StoppedBookie) -> None:
    ledger = stopped_bookie.ledgers[0]
    result = locations(stopped_bookie, ledger)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert (out["ledger"], out["stored"], out["fenced"]) == (ledger, True, False)
    assert [e["entry"] for e in out["entries"]] == list(range(ENTRIES))
    current = stopped_bookie.bookie.ledger_dir / "current"
    assert len({e["entry_log"] for e in out["entries"]}) >= 2, "the ledger spans rolled logs"
    for e in out["entries"]:
        data = (current / e["entry_log"]).read_bytes()
        # The location is the entry itself (just after its 4-byte size); it starts with ledger and entry id.
        assert int.from_bytes(data[e["offset"]:e["offset"] + 8], "big") == ledger
        assert int.from_bytes(data[e["offset"] + 8:e["offset"] + 16], "big") == e["entry"]


def test_a_ledger_this_bookie_never_stored(stopped_bookie: StoppedBookie) -> None:
    out = json.loads(locations(stopped_bookie, 424242).stdout)
    assert out == {"ledger": 424242, "directory": str(stopped_bookie.bookie.ledger_dir), "stored": False}
