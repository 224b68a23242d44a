"""A ZooKeeper client without the fleet's identity (its certificate is trusted, its subject is not the fleet's,
and it has no digest) can neither change nor remove a bookie's cookie or registration, nor register a bookie
of its own; the fleet's identity still can."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from tests.support.zookeeper_tls import SecureFleet, ZkIdentity


def _client(fleet: SecureFleet, identity: ZkIdentity) -> KazooClient:
    zk = KazooClient(hosts=fleet.zookeeper.connect_string, timeout=6,
                     **identity.security(acl=False).kazoo_options())
    zk.start(timeout=20)
    return zk


async def _refused(call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    with pytest.raises(NoAuthError):
        await asyncio.to_thread(call, *args, **kwargs)


async def test_an_outsider_cannot_change_a_cookie_or_a_registration(secure_fleet: SecureFleet,
                                                                    outsider_zk_identity: ZkIdentity) -> None:
    bookie_id = secure_fleet.bookies[0].bookie_id
    root = secure_fleet.ledgers_root
    cookie, registration = f"{root}/cookies/{bookie_id}", f"{root}/available/{bookie_id}"
    fleet = await asyncio.to_thread(_client, secure_fleet, secure_fleet.identity)
    outsider = await asyncio.to_thread(_client, secure_fleet, outsider_zk_identity)
    try:
        cookie_before, _ = await asyncio.to_thread(fleet.get, cookie)
        for path in (cookie, registration):
            await _refused(outsider.set, path, b"forged")
            await _refused(outsider.delete, path)
            await _refused(outsider.set_acls, path, OPEN_ACL_UNSAFE)
            await _refused(outsider.get, path)  # CREATOR_ALL: not even read
        await _refused(outsider.create, f"{root}/available/10.9.9.9:3181", b"", ephemeral=True)
        await _refused(outsider.create, f"{root}/cookies/10.9.9.9:3181", b"forged")

        cookie_after, _ = await asyncio.to_thread(fleet.get, cookie)
        assert cookie_after == cookie_before
        assert await asyncio.to_thread(fleet.exists, registration) is not None
        assert sorted(await asyncio.to_thread(fleet.get_children, f"{root}/available")) == sorted(
            ["readonly", *(b.bookie_id for b in secure_fleet.bookies)])
    finally:
        for zk in (fleet, outsider):
            await asyncio.to_thread(zk.stop)
            await asyncio.to_thread(zk.close)
