"""pytest's exit code written to the file named by ``BOOKIE_FLEET_PYTEST_STATUS_FILE``, as the session ends.

``scripts/test`` runs its groups as background jobs of one shell for most of an hour. When process ids wrap
around, that shell can lose the exit status of a group that ended earlier ("wait" answers 127); the file keeps it.
The variable is taken out of the environment at the start, so an inner pytest session a test runs cannot write
its own code there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "BOOKIE_FLEET_PYTEST_STATUS_FILE"
_target = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    target = os.environ.pop(ENV, None)
    if target:
        config.stash[_target] = Path(target)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.stash.get(_target, None)
    if target is not None:  # session.exitstatus, not the hook's argument: the hooks before may have changed it
        target.write_text(f"{int(session.exitstatus)}\n")
