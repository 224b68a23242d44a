"""pytest's exit code written to the file named by ``BOOKIE_FLEET_PYTEST_STATUS_FILE``, as the session ends.

``scripts/test`` runs its groups as background jobs of one shell for most of an hour. When process ids wrap
around, that shell can lose the exit status of a group that ended earlier ("wait" answers 127); the file keeps it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("BOOKIE_FLEET_PYTEST_STATUS_FILE")
    if target:  # session.exitstatus, not the hook's argument: the hooks that ran before may have changed it
        Path(target).write_text(f"{int(session.exitstatus)}\n")
