"""Our bookies and our client work against a ZooKeeper reachable only over TLS (client certificates
required), with every znode they create protected by BookKeeper's zkEnableSecurity ACL."""

from __future__ import annotations

import asyncio

from bookie.client import BookKeeper
from bookie.metadata.security import ZkSecurity
from bookie.metadata.store import MetadataError, MetadataStore
from kazoo.security import Permissions

from tests.support.zookeeper_tls import SecureFleet


async def test_bookies_register_and_clients_write_and_read_over_tls(secure_fleet: SecureFleet) -> None:
    async with BookKeeper(secure_fleet.client_config()) as bk:
        assert sorted(await bk.writable_bookies()) == sorted(b.bookie_id for b in secure_fleet.bookies)
        handle = await bk.create_ledger(3, 2, 2)
        payloads = [b"secure-%d" % i for i in range(20)]
        await asyncio.gather(*(handle.add(p) for p in payloads))
        await handle.close()
        reader = await bk.open_ledger(handle.ledger_id)
        assert [e.payload for e in await reader.read(0, 19)] == payloads


async def test_every_znode_the_fleet_creates_belongs_to_its_identities(secure_fleet: SecureFleet) -> None:
    """CREATOR_ALL: the ACL names the creating session's identities (digest and x509), nobody else."""
    async with MetadataStore(secure_fleet.zookeeper.connect_string, secure_fleet.ledgers_root,
                             security=secure_fleet.identity.security()) as store:
        zk = store._zk
        bookie_id = secure_fleet.bookies[0].bookie_id
        paths = [store.layout.cookie(bookie_id), store.layout.bookie(bookie_id), store.layout.root,
                 store.layout.instance_id]
        for path in paths:
            acls, _ = await asyncio.to_thread(zk.get_acls, path)
            schemes = {acl.id.scheme for acl in acls}
            assert schemes <= {"digest", "x509"} and schemes, (path, acls)
            assert all(acl.perms == Permissions.ALL for acl in acls), (path, acls)
            assert any(acl.id.id.startswith("bookie-fleet:") for acl in acls if acl.id.scheme == "digest"), acls
            assert not any(acl.id.scheme == "world" for acl in acls), (path, acls)


async def test_a_plaintext_client_gets_nowhere(secure_fleet: SecureFleet) -> None:
    store = MetadataStore(secure_fleet.zookeeper.connect_string, secure_fleet.ledgers_root, connect_timeout_s=3,
                          security=ZkSecurity())
    try:
        await store.connect()
        raise AssertionError("a plaintext session was established with a TLS-only ZooKeeper")
    except MetadataError as exc:
        assert "cannot connect to ZooKeeper" in str(exc)
