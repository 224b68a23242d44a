"""The per-add CPU probe (bench/add_cpu.py) runs on a tiny workload; numbers are not checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "add_cpu.py"


def test_add_cpu_quick_run_reports_cpu_per_add() -> None:
    result = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rounds = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(rounds) == 1
    assert rounds[0]["adds_per_s"] > 0 and rounds[0]["process_us_per_add"] >= 0
