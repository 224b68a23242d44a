"""While re-replication is disabled (``underreplication/disable``, as an operator sets it for planned restarts)
our auditor marks no ledger of a lost bookie, as BookKeeper's auditor waits; once it is enabled again the
ledgers of a bookie still lost are marked. The disable znode of somebody else is never lifted by a caller that
names another owner."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bookie.client import BookKeeper
from bookie.client.autorecovery import Autorecovery

from tests.support.java_bookies import BookieCluster

OWNER = b"bookie-operator test"
SESSION_BOUND_S = 60.0   # the killed bookie's registration goes with its ZooKeeper session


async def _unregistered(store: Any, bookie: str) -> None:
    """Until ZooKeeper has dropped the killed bookie's registration: only then is it lost to an auditor."""
    deadline = time.monotonic() + SESSION_BOUND_S
    while bookie in set(await store.list_bookies()) | set(await store.list_bookies(readonly=True)):
        assert time.monotonic() < deadline, f"{bookie} still registered {SESSION_BOUND_S}s after its kill"
        await asyncio.sleep(0.5)


async def test_lost_bookie_is_marked_only_once_replication_is_enabled_again(
        cluster_factory: Callable[..., BookieCluster]) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "python", 3)
    async with BookKeeper(cluster.client_config(add_timeout_s=3.0)) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(20):
            await lh.add(b"e-%d" % i)
        await lh.close()
        victim = lh.ensemble[0]
        store = bk.store
        assert await store.disable_replication_as(OWNER)
        assert not await store.disable_replication_as(b"someone else"), "already disabled: not taken over"
        assert await store.replication_disabled_by() == OWNER
        await asyncio.to_thread(cluster.by_id(victim).kill)
        await _unregistered(store, victim)
        # Delay 0: without the disable the first audit marks the ledger.
        ar = Autorecovery(bk, "auditor-under-test", lost_bookie_recovery_delay_s=0)
        for _ in range(3):
            assert await ar.audit() == [], "nothing marked while replication is disabled"
        assert await store.list_underreplicated() == []

        assert not await store.enable_replication_of(b"someone else"), "another owner's disable is kept"
        assert await store.replication_disabled_by() == OWNER
        assert await store.enable_replication_of(OWNER)
        assert await store.replication_disabled_by() is None
        assert await ar.audit() == [lh.ledger_id], "the bookie still lost is marked once enabled"
        assert await store.list_underreplicated() == [lh.ledger_id]
