"""The bookie serves in its new mode before it advertises that mode in ZooKeeper: while it registers as writable
it already takes writes (a client that finds it writable there is never refused as read-only), and while it
registers as read-only it already refuses them. A registration that fails leaves the mode as it was.

The state manager alone, with a registrar that records the mode the bookie serves in when it is called."""

from __future__ import annotations

import pytest
from bookie.state import DiskThresholds, StateManager


class RecordingRegistrar:
    def __init__(self) -> None:
        self.manager: StateManager | None = None
        self.serving_when_registered: list[tuple[bool, bool]] = []  # (registered read-only, serving read-only)
        self.fail = False

    async def __call__(self, read_only: bool) -> None:
        assert self.manager is not None
        self.serving_when_registered.append((read_only, self.manager.read_only))
        if self.fail:
            raise ConnectionError("ZooKeeper unreachable")


async def _manager() -> tuple[StateManager, RecordingRegistrar]:
    registrar = RecordingRegistrar()
    manager = StateManager(DiskThresholds(0.95, 0.9, 0.95), registrar)
    registrar.manager = manager
    await manager.start()
    return manager, registrar


async def test_each_mode_is_served_before_it_is_registered() -> None:
    manager, registrar = await _manager()
    await manager.set_manual(True)
    await manager.set_manual(False)
    assert registrar.serving_when_registered[1:] == [(True, True), (False, False)]


async def test_a_failed_registration_leaves_the_mode_unchanged() -> None:
    manager, registrar = await _manager()
    registrar.fail = True
    with pytest.raises(ConnectionError):
        await manager.set_manual(True)
    assert not manager.read_only
