"""Power-loss fixtures: one FUSE mount of the power-loss file system per session (``powerloss_fs``), bookies
whose journal and ledger directories live on it (``powercut_bookie``).

The mount is made in a fresh directory outside pytest's temporary tree (whose clean-up at the next start must
never walk into a stale mount) and undone at the end, also when a test failed; a mount that a killed run left
behind is unmounted lazily at the next start (``unmount_leftovers``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.durability.powercut import PowerCutBookie, plan_powercut_bookie
from tests.support.powerloss.mount import PowerLossFs, fuse_available


@pytest.fixture(scope="session")
def powerloss_fs() -> Iterator[PowerLossFs]:
    missing = fuse_available()
    if missing is not None:
        pytest.fail(f"the power-loss tests need FUSE: {missing}")
    base = Path(tempfile.mkdtemp(prefix="bookie-fleet-powerloss-"))
    fs = PowerLossFs.mount(base / "mnt", base / "state")
    try:
        yield fs
    finally:
        fs.unmount()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def powercut_bookie(powerloss_fs: PowerLossFs, zookeeper: ZooKeeperServer,
                    tmp_path: Path) -> Iterator[PowerCutBookie]:
    """An unstarted bookie on a zone of its own; ``configure`` it, then ``start`` it."""
    bookie = plan_powercut_bookie(powerloss_fs, zookeeper, tmp_path)
    try:
        yield bookie
    finally:
        bookie.stop()
