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


# Accounting is one switch per PID namespace, and a process is accounted in its own namespace's file and in every
# ancestor's: run in a namespace of its own, this test's recording neither steals nor stops one of the whole
# suite around it (``python bench/process_cpu.py --out DIR -- ./scripts/test``).
OWN_PID_NAMESPACE = ("unshare", "--pid", "--fork", "--mount-proc")


def _rows(output: str) -> dict[str, int]:
    """program -> processes, from the printed table."""
    rows = {}
    for line in output.splitlines()[2:]:
        _minutes, _share, processes, program = line.split(maxsplit=3)
        rows[program] = int(processes)
    return rows


def test_the_commands_processes_are_counted_under_their_program(tmp_path: Path) -> None:
    out = tmp_path / "recording"
    result = run_bench(BENCH, "--out", str(out), "--all", "--", "sh", "-c", COMMAND, timeout=60,
                       wrapper=OWN_PID_NAMESPACE)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(result.stdout)
    assert rows.get("other Python", 0) >= 3, result.stdout
    again = run_bench(BENCH, "--out", str(out), "--report", "--all", timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout == result.stdout


def test_a_process_that_execs_is_counted_under_the_program_it_became(tmp_path: Path) -> None:
    # Seen first as Python (a pod's ``runc init`` is seen first as runc), then ``sleep`` until it ends.
    becomes_sleep = "import os, time; time.sleep(1.5); os.execvp('sleep', ['sleep', '1.5'])"
    result = run_bench(BENCH, "--out", str(tmp_path / "recording"), "--all", "--", sys.executable, "-c",
                       becomes_sleep, timeout=60, wrapper=OWN_PID_NAMESPACE)
    assert result.returncode == 0, result.stdout + result.stderr
    # The one Python process is the recorder: the kernel writes a record of the process that switches
    # accounting off.
    assert _rows(result.stdout) == {"other: sleep": 1, "other Python": 1}, result.stdout


def test_a_report_without_a_recording_is_refused(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--out", str(tmp_path / "nothing"), "--report", timeout=60)
    assert result.returncode == 2
    assert "no recording in" in result.stderr and "pacct" in result.stderr


def test_a_recording_inside_another_leaves_the_outer_one_recording(tmp_path: Path) -> None:
    # The outer recording's command: an inner recording as this file's tests make one, then a process of its own.
    inner = " ".join([*OWN_PID_NAMESPACE, sys.executable, str(BENCH), "--out", str(tmp_path / "inner"), "--", "true"])
    result = run_bench(BENCH, "--out", str(tmp_path / "outer"), "--all", "--", "sh", "-c",
                       f"{inner} > /dev/null && sleep 1.5", timeout=60, wrapper=OWN_PID_NAMESPACE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _rows(result.stdout).get("other: sleep", 0) >= 1, result.stdout
