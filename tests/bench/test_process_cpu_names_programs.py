"""bench/process_cpu.py runs a command with process accounting on and names, by program, the CPU of the processes
that ended meanwhile; ``--report`` gives the same table again from the recording. Figures are not checked, only
that the command's own processes are counted under the program their command line names."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "process_cpu.py"
# A shell and two interpreters that live long enough to be seen by the half-second sampler, each a command line
# naming Python.
COMMAND = (f"{sys.executable} -c 'import subprocess, sys, time; "
           f"subprocess.run([sys.executable, \"-c\", \"import time; time.sleep(1.5)\"]); time.sleep(1.5)'")


def _rows(output: str) -> dict[str, int]:
    """program -> processes, from the printed table."""
    rows = {}
    for line in output.splitlines()[2:]:
        _minutes, _share, processes, program = line.split(maxsplit=3)
        rows[program] = int(processes)
    return rows


def test_the_commands_processes_are_counted_under_their_program(tmp_path: Path) -> None:
    out = tmp_path / "recording"
    result = run_bench(BENCH, "--out", str(out), "--all", "--", "sh", "-c", COMMAND, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(result.stdout)
    assert rows.get("other Python", 0) >= 3, result.stdout
    again = run_bench(BENCH, "--out", str(out), "--report", "--all", timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout == result.stdout


def test_a_report_without_a_recording_is_refused(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--out", str(tmp_path / "nothing"), "--report", timeout=60)
    assert result.returncode == 2
    assert "no recording in" in result.stderr and "pacct" in result.stderr
