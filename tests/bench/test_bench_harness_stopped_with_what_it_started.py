"""A benchmark harness that outlives its test's time limit is stopped with what it started: it gets SIGTERM
(``tests/support/bench_runs.py``), leaves through the ``finally`` that stops its processes
(``bookie_fleet.processes.stop_on_sigterm``), and nothing of it is left running."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

HARNESS = """
    import sys, time
    from pathlib import Path
    from bookie_fleet.processes import spawn, stop_on_sigterm, terminate

    stop_on_sigterm()
    child = spawn(["sleep", "300"], Path(sys.argv[1]) / "child.log")   # in its own session, as bookies are
    (Path(sys.argv[1]) / "child.pid").write_text(str(child.pid))
    try:
        time.sleep(300)
    finally:
        terminate(child, 10)
        (Path(sys.argv[1]) / "stopped").write_text("yes")
"""


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_harness_past_its_time_stops_its_processes(tmp_path: Path) -> None:
    script = tmp_path / "harness.py"
    script.write_text(textwrap.dedent(HARNESS))
    with pytest.raises(subprocess.TimeoutExpired):
        run_bench(script, str(tmp_path), timeout=5)
    assert (tmp_path / "stopped").read_text() == "yes", "the harness did not leave through its finally"
    assert not _running(int((tmp_path / "child.pid").read_text())), "the harness's child still runs"
