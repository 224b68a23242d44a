"""The playground without Kubernetes (`--bookies-only`) runs end to end and leaves nothing running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_playground_writes_reads_deletes_and_prints_states(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bookie_fleet.cli", "playground", "--bookies-only", "--workdir", str(tmp_path),
         "--ledgers", "3", "--entries", "50"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "read back all 3 ledgers byte-identical" in out
    assert "deleted ledgers" in out
    assert out.count("writable") >= 3
    assert "fleet stopped" in out
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftovers.stdout == "", f"processes left running: {leftovers.stdout}"
