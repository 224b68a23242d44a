"""A ZooKeeper session serves calls as soon as ``connect()`` returns.

kazoo's ``start()`` returns once its live flag is set; its state turns CONNECTED a moment later, on kazoo's
own thread. A bookie that asked for its cookie in between used to fail to start with "not connected to
ZooKeeper (LOST)" (seen on a slow, sanitized build). Here kazoo's state notice is held back to widen that
window, against a real ZooKeeper server.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer
from kazoo.client import KazooClient, KazooState

NOTICE_DELAY_S = 0.5


@pytest.fixture
def late_connected_notice(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """kazoo reports CONNECTED ``NOTICE_DELAY_S`` after its live flag is set; the event is set once it has."""
    reported = threading.Event()
    make_state_change = KazooClient._make_state_change

    def late(self: KazooClient, state: Any) -> None:
        if state == KazooState.CONNECTED:
            time.sleep(NOTICE_DELAY_S)
            reported.set()
        make_state_change(self, state)

    monkeypatch.setattr(KazooClient, "_make_state_change", late)
    return reported


async def test_calls_made_before_kazoo_reports_connected_succeed(
        zookeeper: ZooKeeperServer, ledgers_root: str, late_connected_notice: threading.Event) -> None:
    store = MetadataStore(zookeeper.connect_string, ledgers_root, session_timeout_ms=4000)
    await store.connect()
    try:
        assert not late_connected_notice.is_set(), "the window this test needs did not open"
        instance = await store.init_cluster()
        assert await store.instance_id() == instance
    finally:
        await store.close()
