"""``--file-durations=N`` ends a run with its N slowest test files, each with the time its tests took, set-up and
tear-down included (tests/support/file_durations.py): the figure ``scripts/test`` balances its groups by.

The case runs an inner pytest session in its own process, with the plugin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_slowest_files_are_named_slowest_first_with_fixture_time_counted(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import time
        import pytest
        pytest_plugins = ["tests.support.file_durations"]
        @pytest.fixture
        def slow_setup():
            time.sleep(0.6)
        """))
    (tmp_path / "test_quick.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "test_slow_fixture.py").write_text("def test_c(slow_setup):\n    pass\n")
    (tmp_path / "test_slow_body.py").write_text("import time\n\ndef test_d():\n    time.sleep(0.3)\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path),
                             f"--rootdir={tmp_path}", "--file-durations=2"],
                            cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "slowest 2 of 3 test files" in out, out
    listed = re.findall(r"^\s*([0-9.]+) s  (\S+)$", out, flags=re.MULTILINE)
    assert [path for _, path in listed] == ["test_slow_fixture.py", "test_slow_body.py"], out
    assert float(listed[0][0]) >= 0.6, out
