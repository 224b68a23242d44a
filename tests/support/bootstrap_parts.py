"""Parts of the bootstrap built beside the tests instead of before them: a test that needs one waits for it.

``scripts/test`` builds the bootstrap's parts that no test needs in its first minutes (Go builds the critical path
of a cold run would otherwise wait for) while the tests run. It names them in ``$BOOKIE_FLEET_PARTS_BUILDING``
and appends a line ``<part> <exit code> <env files>...`` to the file ``$BOOKIE_FLEET_PARTS_BUILT`` as each one ends
(its output in ``$BOOKIE_FLEET_PARTS_LOG``), naming the files of ``$BOOKIE_FLEET_CACHE/env.d`` the part wrote (one
part may write several: pulsar-lts writes ``pulsar-lts.sh`` and ``pulsar-perf.sh``). A test marked
``@pytest.mark.bootstrap_part("netpolicy")`` waits, before its fixtures are set up, until that part is built, then
finds it as if the bootstrap had built it first: the lines the part wrote for the env file are read into this
process's environment. Run any other way (after ``./scripts/bootstrap``, or ``scripts/test`` with arguments) every
part was built before the tests and nothing waits.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

BUILDING_ENV = "BOOKIE_FLEET_PARTS_BUILDING"
BUILT_ENV = "BOOKIE_FLEET_PARTS_BUILT"
LOG_ENV = "BOOKIE_FLEET_PARTS_LOG"
# Below the tests' own timeout (600 s, pyproject.toml), which counts a test's setup too: a part not built by then
# fails the test with this module's message rather than a timeout's traceback. The parts built beside the tests
# take 1 to 3 min of a busy machine.
WAIT_S = 540.0
_POLL_S = 1.0
_applied: set[str] = set()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bootstrap_part(*names): the test needs these parts of scripts/bootstrap "
                                       "(scripts/bootstrap.d/<name>.sh); it waits for those built beside the tests")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("bootstrap_part"):
        for part in mark.args:
            wait_for_part(part)


def building() -> set[str]:
    return set(os.environ.get(BUILDING_ENV, "").split())


@dataclass(frozen=True)
class Built:
    code: int
    env_files: tuple[str, ...]  # the names of the files of $BOOKIE_FLEET_CACHE/env.d the part wrote


def built(status_file: Path) -> dict[str, Built]:
    """Each part built so far, by name."""
    try:
        lines = status_file.read_text().splitlines()
    except FileNotFoundError:
        return {}
    parts = {}
    for line in lines:
        name, *fields = line.split()
        if fields and fields[0].lstrip("-").isdigit():
            parts[name] = Built(int(fields[0]), tuple(fields[1:]))
    return parts


def wait_for_part(part: str, wait_s: float = WAIT_S) -> None:
    """Block until ``part`` is built, if it is being built beside the tests, then take its environment."""
    if part not in building() or part in _applied:
        return
    status_file = Path(os.environ[BUILT_ENV])
    deadline = time.monotonic() + wait_s
    while (done := built(status_file).get(part)) is None:
        if time.monotonic() > deadline:
            pytest.fail(f"the bootstrap's {part} part, built beside the tests, was not done after {wait_s:.0f} s"
                        f"{_log_tail()}", pytrace=False)
        time.sleep(_POLL_S)
    if done.code != 0:
        pytest.fail(f"the bootstrap's {part} part, built beside the tests, failed (exit code {done.code})"
                    f"{_log_tail()}", pytrace=False)
    for env_file in done.env_files:
        os.environ.update(env_file_environment(Path(os.environ["BOOKIE_FLEET_CACHE"]) / "env.d" / env_file))
    _applied.add(part)


def env_file_environment(env_lines: Path) -> dict[str, str]:
    """What an env file's lines set, as bash reads them (they may refer to $PATH)."""
    if not env_lines.is_file():
        return {}
    names = re.findall(r"^export ([A-Za-z_][A-Za-z0-9_]*)=", env_lines.read_text(), flags=re.MULTILINE)
    out = subprocess.run(["bash", "-c", 'source "$1" && env -0', "part-environment", str(env_lines)],
                         check=True, capture_output=True, timeout=30).stdout.decode()
    after = dict(entry.split("=", 1) for entry in out.split("\0") if "=" in entry)
    return {name: after[name] for name in names if name in after}


def _log_tail(lines: int = 30) -> str:
    log = os.environ.get(LOG_ENV)
    if not log or not Path(log).is_file():
        return ""
    tail = Path(log).read_text(errors="replace").splitlines()[-lines:]
    return f"; the end of its output ({log}):\n" + "\n".join(tail)
