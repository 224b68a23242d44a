"""The operator's ZooKeeper sessions, one per metadata service and identity, do not pile up: a session nobody
has asked for in ``IDLE_SESSION_CLOSE_S`` (its cluster's digest Secret was rotated, or the cluster deleted) is
closed the next time any cluster's metadata is asked for, and the sessions in use stay open. Real ZooKeeper;
the operator's clock is the test's."""

from __future__ import annotations

import uuid

from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator.zk import IDLE_SESSION_CLOSE_S, MetadataService


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_rotated_digests_session_is_closed_once_idle(zookeeper: ZooKeeperServer) -> None:
    clock = Clock()
    service = MetadataService(monotonic=clock)
    base = f"/sessions-{uuid.uuid4().hex[:8]}"
    zk, root = zookeeper.connect_string, f"{base}/ledgers"
    try:
        before = await service.cluster(zk, root, digest="bookie-fleet:before")
        other = await service.cluster(zk, f"{base}/other", digest="bookie-fleet:other")
        clock.now += IDLE_SESSION_CLOSE_S / 2
        after = await service.cluster(zk, root, digest="bookie-fleet:after")   # the Secret was rotated
        await service.cluster(zk, f"{base}/other", digest="bookie-fleet:other")
        assert service.open_sessions == 3 and before.store.connected     # idle, but not for long enough yet

        clock.now += IDLE_SESSION_CLOSE_S / 2 + 1
        again = await service.cluster(zk, root, digest="bookie-fleet:after")
        assert again.store is after.store and after.store.connected
        assert not before.store.connected and other.store.connected     # the other was asked for since
        assert service.open_sessions == 2
        assert await again.under_replicated() == 0
    finally:
        await service.close()
    assert service.open_sessions == 0 and not after.store.connected
