"""A test marked with a bootstrap part that scripts/test builds beside the tests waits until that part is built,
then finds it in its environment as the env file would have put it there; a part that failed fails the test with
the end of the part's output; a part not being built (the bootstrap built it first) is not waited for."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.support import bootstrap_parts


@pytest.fixture
def building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache whose `tools` part writes its env file lines, and scripts/test's variables for that part."""
    cache = tmp_path / "cache"
    (cache / "env.d").mkdir(parents=True)
    (cache / "env.d" / "tools.sh").write_text(f'export TOOLS_BIN="{cache}/tools-1/bin"\n'
                                              f'export PATH="{cache}/tools-1/bin:$PATH"\n')
    monkeypatch.setenv("BOOKIE_FLEET_CACHE", str(cache))
    monkeypatch.setenv(bootstrap_parts.BUILDING_ENV, "tools other")
    monkeypatch.setenv(bootstrap_parts.BUILT_ENV, str(tmp_path / "parts-built"))
    monkeypatch.setenv(bootstrap_parts.LOG_ENV, str(tmp_path / "parts.log"))
    monkeypatch.delenv("TOOLS_BIN", raising=False)
    monkeypatch.setattr(bootstrap_parts, "_applied", set())
    monkeypatch.setattr(bootstrap_parts, "_POLL_S", 0.05)
    return tmp_path / "parts-built"


def test_a_part_being_built_is_waited_for_then_its_environment_taken(building: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.environ["PATH"])  # restored after the test
    builder = threading.Timer(0.5, lambda: building.write_text("other 0\ntools 0\n"))
    builder.start()
    try:
        bootstrap_parts.wait_for_part("tools", wait_s=30)
        assert building.exists(), "returned before the part was built"
    finally:
        builder.join()
    cache = os.environ["BOOKIE_FLEET_CACHE"]
    assert os.environ["TOOLS_BIN"] == f"{cache}/tools-1/bin"
    assert os.environ["PATH"].startswith(f"{cache}/tools-1/bin:")


def test_a_part_that_failed_fails_the_test_with_its_output(building: Path) -> None:
    building.write_text("tools 2\n")
    Path(os.environ[bootstrap_parts.LOG_ENV]).write_text("go: module example.invalid/x: not found\n")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)tools part.*failed \(exit code 2\).*example.invalid/x"):
        bootstrap_parts.wait_for_part("tools", wait_s=30)
    assert "TOOLS_BIN" not in os.environ


def test_a_part_never_done_fails_the_test_naming_it(building: Path) -> None:
    building.write_text("other 0\n")
    with pytest.raises(pytest.fail.Exception, match=r"tools part, built beside the tests, was not done after 0 s"):
        bootstrap_parts.wait_for_part("tools", wait_s=0.2)


def test_a_part_the_bootstrap_built_first_is_not_waited_for(building: Path) -> None:
    bootstrap_parts.wait_for_part("kube", wait_s=0)  # not being built: no status line, no wait, no failure
    assert not building.exists()
