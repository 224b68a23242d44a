"""After a ZooKeeper session expiry the bookie registers again in its current state (writable or read-only), and a
failed attempt is retried with a growing delay until one succeeds: a bookie that serves but is not registered
would get no new ensembles and look lost to the auditor. A unit of the state manager, with a registrar that fails
as ZooKeeper can."""

from __future__ import annotations

from bookie.metadata.session import MetadataError
from bookie.state import DiskThresholds, StateManager


class FlakyRegistrar:
    def __init__(self) -> None:
        self.failures = 0  # the next calls that fail
        self.calls: list[bool] = []

    async def __call__(self, read_only: bool) -> None:
        self.calls.append(read_only)
        if self.failures:
            self.failures -= 1
            raise MetadataError("not connected to ZooKeeper (SUSPENDED)")


async def test_a_failed_registration_is_retried_until_it_succeeds() -> None:
    registrar = FlakyRegistrar()
    state = StateManager(DiskThresholds(0.95, 0.9, 0.95), registrar)
    await state.start()
    registrar.calls.clear()
    registrar.failures = 3
    await state.reregister(first_delay_s=0.01, max_delay_s=0.02)
    assert registrar.calls == [False] * 4, "three failures, then registered"


async def test_it_registers_again_as_what_it_is() -> None:
    registrar = FlakyRegistrar()
    state = StateManager(DiskThresholds(0.95, 0.9, 0.95), registrar)
    await state.start()
    await state.set_manual(True)
    registrar.calls.clear()
    await state.reregister()
    assert registrar.calls == [True], "read-only before the expiry, read-only after"
