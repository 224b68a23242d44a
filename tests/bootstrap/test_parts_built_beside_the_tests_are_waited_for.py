"""A test marked with a bootstrap part that scripts/test builds beside the tests waits until that part is built,
then finds it in its environment as the env file would have put it there, from every env file the part wrote; a
part that failed fails the test with the end of the part's output; a part not being built (the bootstrap built it
first) is not waited for. The parts are built by scripts/test's own runner (scripts/bootstrap.d/lib/
parts-beside-tests.sh), here over small part scripts."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import bootstrap_parts

RUNNER = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d" / "lib" / "parts-beside-tests.sh"

# A part writing two env files, as pulsar-lts does (pulsar-lts.sh and pulsar-perf.sh).
TOOLS = """sleep 0.5
echo 'export TOOLS_BIN="$BOOKIE_FLEET_CACHE/tools-1/bin"' > "$BOOKIE_FLEET_CACHE/env.d/tools.sh"
echo 'export PATH="$BOOKIE_FLEET_CACHE/tools-1/bin:$PATH"' >> "$BOOKIE_FLEET_CACHE/env.d/tools.sh"
echo 'export TOOLS_EXTRA_LIB="$BOOKIE_FLEET_CACHE/tools-extra/lib"' > "$BOOKIE_FLEET_CACHE/env.d/tools-extra.sh"
"""
FAILING = """echo "go: module example.invalid/x: not found"
exit 2
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache, its env.d holding an env file of a part the bootstrap built before, and scripts/test's variables
    for the parts `other` and `tools`."""
    cache = tmp_path / "cache"
    (cache / "env.d").mkdir(parents=True)
    (cache / "env.d" / "earlier.sh").write_text('export EARLIER_PART_DIR="/nowhere"\n')
    monkeypatch.setenv("BOOKIE_FLEET_CACHE", str(cache))
    monkeypatch.setenv(bootstrap_parts.BUILDING_ENV, "other tools")
    monkeypatch.setenv(bootstrap_parts.BUILT_ENV, str(tmp_path / "parts-built"))
    monkeypatch.setenv(bootstrap_parts.LOG_ENV, str(tmp_path / "parts.log"))
    for name in ("TOOLS_BIN", "TOOLS_EXTRA_LIB", "EARLIER_PART_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", os.environ["PATH"])  # restored after the test
    monkeypatch.setattr(bootstrap_parts, "_applied", set())
    monkeypatch.setattr(bootstrap_parts, "_POLL_S", 0.05)
    return cache


@pytest.fixture
def build_parts(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], None]]:
    """Starts scripts/test's runner over part scripts {name: body}, in that order, its output in the parts' log."""
    runners: list[subprocess.Popen[bytes]] = []

    def start(parts: dict[str, str]) -> None:
        scripts = []
        for name, body in parts.items():
            script = tmp_path / "parts" / f"{name}.sh"
            script.parent.mkdir(exist_ok=True)
            script.write_text("set -e\n" + body)
            scripts.append(str(script))
        with open(os.environ[bootstrap_parts.LOG_ENV], "wb") as log:
            runners.append(subprocess.Popen(["bash", str(RUNNER), os.environ[bootstrap_parts.BUILT_ENV], *scripts],
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    yield start
    for runner in runners:  # the runner and the part it is building
        try:
            os.killpg(runner.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        runner.wait(timeout=10)


def test_a_part_being_built_is_waited_for_then_every_env_file_it_wrote_taken(cache: Path,
        build_parts: Callable[[dict[str, str]], None]) -> None:
    build_parts({"other": "true\n", "tools": TOOLS})
    bootstrap_parts.wait_for_part("tools", wait_s=30)
    assert (cache / "env.d" / "tools-extra.sh").exists(), "returned before the part was built"
    assert os.environ["TOOLS_BIN"] == f"{cache}/tools-1/bin"
    assert os.environ["PATH"].startswith(f"{cache}/tools-1/bin:")
    assert os.environ["TOOLS_EXTRA_LIB"] == f"{cache}/tools-extra/lib"
    assert "EARLIER_PART_DIR" not in os.environ  # written before the part: the bootstrap's env file has it
    built = bootstrap_parts.built(Path(os.environ[bootstrap_parts.BUILT_ENV]))
    assert built["other"] == bootstrap_parts.Built(0, ())


def test_a_part_that_failed_fails_the_test_with_its_output(cache: Path,
        build_parts: Callable[[dict[str, str]], None]) -> None:
    build_parts({"tools": FAILING})
    with pytest.raises(pytest.fail.Exception, match=r"(?s)tools part.*failed \(exit code 2\).*example.invalid/x"):
        bootstrap_parts.wait_for_part("tools", wait_s=30)
    assert "TOOLS_BIN" not in os.environ


def test_a_part_never_done_fails_the_test_naming_it(cache: Path,
        build_parts: Callable[[dict[str, str]], None]) -> None:
    build_parts({"other": "true\n", "tools": "sleep 30\n"})
    with pytest.raises(pytest.fail.Exception, match=r"tools part, built beside the tests, was not done after 1 s"):
        bootstrap_parts.wait_for_part("tools", wait_s=1)


def test_a_part_the_bootstrap_built_first_is_not_waited_for(cache: Path) -> None:
    bootstrap_parts.wait_for_part("kube", wait_s=0)  # not being built: no status line, no wait, no failure
    assert not Path(os.environ[bootstrap_parts.BUILT_ENV]).exists()
