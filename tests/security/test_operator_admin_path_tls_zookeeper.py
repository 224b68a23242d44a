"""The operator's admin path against a fleet whose ZooKeeper is reachable only over TLS, with zkEnableSecurity:
with the fleet's identity (its --zk-* flags, or a cluster's own spec.tls.zookeeper certificate, presented from
memory) it reads registrations and cookies and initialises the layout, and its admin client changes a bookie
with the admin token; without them it gets nothing."""

from __future__ import annotations

import aiohttp
import pytest
from bookie_operator import zk
from bookie_operator.bookie_client import BookieAdmin, BookieApiError
from bookie_operator.zk import ZkTlsIdentity

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.zookeeper_tls import SecureFleet, ZkIdentity


def operator_env(fleet: SecureFleet) -> dict[str, str]:
    """What ``python -m bookie_operator --zk-tls --zk-tls-ca ... --zk-enable-security`` puts in its environment."""
    identity = fleet.identity
    assert identity.digest_file is not None
    return {zk.ENV_TLS: "true", zk.ENV_TLS_CA: str(identity.ca), zk.ENV_TLS_CERT: str(identity.client.cert),
            zk.ENV_TLS_KEY: str(identity.client.key), zk.ENV_DIGEST_FILE: str(identity.digest_file),
            zk.ENV_ENABLE_SECURITY: "true"}


async def test_the_operator_reads_and_changes_a_secured_fleet(secure_fleet: SecureFleet) -> None:
    service = zk.MetadataService(zk.security_from_env(operator_env(secure_fleet)))
    try:
        cluster = await service.cluster(secure_fleet.zookeeper.connect_string, secure_fleet.ledgers_root)
        ids = {b.bookie_id for b in secure_fleet.bookies}
        assert await cluster.registered_bookies() == ids
        assert await cluster.init_cluster()  # idempotent: the instance id the bookies created
        assert all([await cluster.cookie_exists(b) for b in ids])
        assert not await cluster.cookie_exists("10.9.9.9:3181")
    finally:
        await service.close()

    bookie = secure_fleet.bookies[2]
    async with aiohttp.ClientSession() as http:
        anonymous = BookieAdmin(http, bookie.address, bookie.http_port)
        with pytest.raises(BookieApiError) as refused:
            await anonymous.set_read_only(True)
        assert refused.value.status == 401
        admin = BookieAdmin(http, bookie.address, bookie.http_port, token=TEST_ADMIN_TOKEN)
        assert await admin.set_read_only(True) is True
        assert (await admin.state())["readOnly"] is True
        assert await admin.set_read_only(False) is False
        await admin.suspend_compaction(True)
        await admin.suspend_compaction(False)


async def test_without_the_fleet_identity_the_operator_cannot_connect(secure_fleet: SecureFleet) -> None:
    service = zk.MetadataService(zk.security_from_env({}))
    try:
        with pytest.raises(zk.MetadataError):
            await service.cluster(secure_fleet.zookeeper.connect_string, secure_fleet.ledgers_root)
    finally:
        await service.close()


def cluster_identity(identity: ZkIdentity) -> ZkTlsIdentity:
    """What the operator reads from a cluster's spec.tls.zookeeper Secret (ca.crt, tls.crt, tls.key)."""
    return ZkTlsIdentity(ca=identity.ca.read_bytes(), cert=identity.client.cert.read_bytes(),
                         key=identity.client.key.read_bytes())


async def test_a_clusters_own_certificate_is_its_identity(secure_fleet: SecureFleet,
                                                          outsider_zk_identity: ZkIdentity) -> None:
    service = zk.MetadataService(zk.security_from_env({}))     # the operator has no ZooKeeper identity itself
    try:
        cluster = await service.cluster(secure_fleet.zookeeper.connect_string, secure_fleet.ledgers_root,
                                        acl=True, tls=cluster_identity(secure_fleet.identity))
        ids = {b.bookie_id for b in secure_fleet.bookies}
        assert await cluster.registered_bookies() == ids
        assert all([await cluster.cookie_exists(b) for b in ids])

        # Same CA, another subject: it may connect, but the fleet's znodes are not its to read or change.
        outsider = await service.cluster(secure_fleet.zookeeper.connect_string, secure_fleet.ledgers_root,
                                         tls=cluster_identity(outsider_zk_identity))
        assert outsider.store is not cluster.store
        with pytest.raises(zk.MetadataError):
            await outsider.delete_cookie(next(iter(ids)))
        assert all([await cluster.cookie_exists(b) for b in ids])
    finally:
        await service.close()
