"""The README's main job tells the product's story end to end on a local Kubernetes (short mode), with a real
Apache Pulsar broker as the workload: the operator installed by Helm makes the fullest bookie read-only, two
topics expire and Pulsar deletes their ledgers, the bookies name the topic whose ledgers keep the disks full
(explain endpoint and pinned-garbage gauge), scheduled compaction reclaims the space, the bookie becomes
writable again, the operator's storage audit, run on request (Spark on Kubernetes, reading the bookies through
their admin API), writes a report that names the topics, and nothing is left running or mounted afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bookie_fleet.story import AUDIT_STEP


@pytest.mark.timeout(1800)
def test_the_playground_story_runs_end_to_end_and_cleans_up(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "bookie_fleet.cli", "playground", "--short", "--workdir",
                             str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["read_only_bookie"] in {"playground-0", "playground-1", "playground-2"}
    assert summary["written_bytes"] > 0
    assert summary["reclaimed_bytes"] > 0
    assert summary["used_after_bytes"] < summary["used_before_bytes"]
    assert summary["writable_again"] is True
    assert summary["acknowledged_messages"] > 0 and summary["deleted_ledgers"] >= 2
    orders = "persistent://public/playground/orders"
    assert summary["pinning"][orders]["garbage_bytes"] > 0, summary["pinning"]
    assert orders in {g["topic"] for g in summary["pinned_garbage"]}, summary["pinned_garbage"]
    report = Path(summary["report"])
    assert report.is_file() and "playground-0" in report.read_text()
    assert "persistent://public/playground/" in report.read_text(), "the audit names Pulsar's topics"
    assert [s["step"] for s in summary["steps"]][-1] == AUDIT_STEP
    assert "== what happened" in result.stdout and "everything stopped" in result.stdout

    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftovers.stdout == "", f"processes left running: {leftovers.stdout}"
    mounts = Path("/proc/mounts").read_text()
    assert str(tmp_path) not in mounts, "tmpfs disks left mounted"
