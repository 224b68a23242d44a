"""pytest writes the code it exits with to ``BOOKIE_FLEET_PYTEST_STATUS_FILE`` (tests/support/exit_status.py):
``scripts/test`` reads it for a group whose status its shell lost when process ids wrapped around.

Each case runs an inner pytest session in its own process, with the plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("body", "expected"), [("assert True", 0), ("assert False", 1),
                                               ("raise KeyboardInterrupt", 2)])
def test_the_file_holds_the_code_pytest_exits_with(tmp_path: Path, body: str, expected: int) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "conftest.py").write_text('pytest_plugins = ["tests.support.exit_status"]\n')
    (inner / "test_one.py").write_text(textwrap.dedent(f"""
        import os
        def test_one():
            assert "BOOKIE_FLEET_PYTEST_STATUS_FILE" not in os.environ  # what the tests start does not inherit it
            {body}
        """))
    status = tmp_path / "status"
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(inner),
                             f"--rootdir={inner}"],
                            cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO),
                                 "BOOKIE_FLEET_PYTEST_STATUS_FILE": str(status)})
    assert result.returncode == expected, result.stdout + result.stderr
    assert status.read_text() == f"{expected}\n"

