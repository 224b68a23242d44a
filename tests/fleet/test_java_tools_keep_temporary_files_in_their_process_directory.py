"""The short-lived Java tools and clients a process runs (BookKeeper's benchmarks, the tests' client harness) get
``java.io.tmpdir`` in one directory of that process (``bookie_fleet.processes.java_tools_tmpdir``), removed when the
process exits: what a tool killed on its time limit leaves there (the native checksum library its jar unpacks at
each start) does not stay in /tmp for good."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LEAVE_A_FILE = """
from pathlib import Path
from bookie_fleet.processes import java_tools_tmpdir
option = java_tools_tmpdir()
assert option == java_tools_tmpdir(), "one directory per process"
directory = Path(option.removeprefix("-Djava.io.tmpdir="))
(directory / "libcirce-checksum123.so").write_bytes(b"left by a killed JVM")
print(directory)
"""


def test_the_directory_and_what_a_killed_tool_left_in_it_go_when_the_process_exits() -> None:
    out = subprocess.run([sys.executable, "-c", LEAVE_A_FILE], capture_output=True, text=True, timeout=60, check=True)
    directory = Path(out.stdout.strip())
    assert directory.name.startswith("bookie-fleet-java-tools-"), directory
    assert not directory.exists(), f"{directory} outlived its process"
