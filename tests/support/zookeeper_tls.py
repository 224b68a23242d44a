"""pytest fixtures around a real ZooKeeper reachable only over TLS, and the fleet's identity on it.

``zookeeper_tls``: one TLS-only ZooKeeper (``secureClientPort``, client certificates required) for the session.
``fleet_zk_identity``: what every component of the fleet presents to it: a client certificate (CN=bookie-fleet)
and a digest credential; ``zk_overrides()`` is the bookie configuration for it, ``security()`` the client's.
``outsider_zk_identity``: a certificate of the same CA (it may connect) with another subject and no digest.
``secure_fleet``: three of our bookies on that ZooKeeper with the fleet's identity and CREATOR_ALL ACLs
(127.0.0.41-43), started once per session; tests must not stop them.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from bookie.client import ClientConfig
from bookie.metadata.security import ZkSecurity
from bookie_fleet.local_bookies import LocalBookie, plan_bookies, start_all, stop_all
from bookie_fleet.zookeeper import ZooKeeperServer, ZooKeeperTls

from tests.support.admin_api import TEST_ADMIN_TOKEN, PemIdentity, write_ca, write_identity
from tests.support.bookies import TEST_OVERRIDES


@dataclass(frozen=True)
class ZkIdentity:
    ca: Path
    client: PemIdentity
    digest_file: Path | None

    def zk_overrides(self, *, acl: bool = True) -> dict[str, Any]:
        """Bookie configuration keys for TLS to ZooKeeper with this identity (and CREATOR_ALL ACLs)."""
        values: dict[str, Any] = {"zkTlsEnable": True, "zkTlsTrustStorePath": str(self.ca),
                                  "zkTlsCertificatePath": str(self.client.cert),
                                  "zkTlsKeyPath": str(self.client.key), "zkEnableSecurity": acl}
        if self.digest_file is not None:
            values["zkDigestAuthFile"] = str(self.digest_file)
        return values

    def security(self, *, acl: bool = True) -> ZkSecurity:
        digest = self.digest_file.read_text().strip() if self.digest_file is not None else None
        return ZkSecurity(tls=True, certfile=self.client.cert, keyfile=self.client.key, ca=self.ca, digest=digest,
                          acl=acl)


@pytest.fixture(scope="session")
def zk_tls_ca() -> trustme.CA:
    return trustme.CA(organization_name="bookie-fleet tests")


@pytest.fixture(scope="session")
def zk_tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zk-tls")


@pytest.fixture(scope="session")
def fleet_zk_identity(zk_tls_ca: trustme.CA, zk_tls_dir: Path) -> ZkIdentity:
    digest = zk_tls_dir / "fleet-digest"
    digest.write_text(f"bookie-fleet:{secrets.token_urlsafe(24)}\n")
    digest.chmod(0o600)
    client = write_identity(zk_tls_ca, zk_tls_dir, "fleet", "bookie-fleet.test", common_name="bookie-fleet")
    return ZkIdentity(write_ca(zk_tls_ca, zk_tls_dir / "ca.crt"), client, digest)


@pytest.fixture(scope="session")
def outsider_zk_identity(zk_tls_ca: trustme.CA, zk_tls_dir: Path) -> ZkIdentity:
    client = write_identity(zk_tls_ca, zk_tls_dir, "outsider", "outsider.test", common_name="outsider")
    return ZkIdentity(write_ca(zk_tls_ca, zk_tls_dir / "ca.crt"), client, None)


@pytest.fixture(scope="session")
def zookeeper_tls(zk_tls_ca: trustme.CA, zk_tls_dir: Path, fleet_zk_identity: ZkIdentity,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server_identity = write_identity(zk_tls_ca, zk_tls_dir, "zookeeper", "127.0.0.1", "localhost")
    tls = ZooKeeperTls(key_store=server_identity.combined(zk_tls_dir / "zookeeper-keystore.pem"),
                       trust_store=fleet_zk_identity.ca, client_cert=fleet_zk_identity.client.cert,
                       client_key=fleet_zk_identity.client.key)
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper-tls"), tls=tls)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class SecureFleet:
    """Bookies of ours on the TLS-only ZooKeeper, with the fleet's identity and CREATOR_ALL ACLs."""

    zookeeper: ZooKeeperServer
    identity: ZkIdentity
    bookies: list[LocalBookie]
    ledgers_root: str

    def client_config(self) -> ClientConfig:
        return ClientConfig(zk_servers=self.zookeeper.connect_string, ledgers_root=self.ledgers_root,
                            zk_security=self.identity.security())


@pytest.fixture(scope="session")
def secure_fleet(zookeeper_tls: ZooKeeperServer, fleet_zk_identity: ZkIdentity,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureFleet]:
    root = f"/secure-{uuid.uuid4().hex[:8]}/ledgers"
    planned = plan_bookies(3, tmp_path_factory.mktemp("secure-bookies"), zookeeper_tls.connect_string, root,
                           first_host=41, admin_token=TEST_ADMIN_TOKEN,
                           **{**TEST_OVERRIDES, **fleet_zk_identity.zk_overrides()})
    try:
        start_all(planned, 90)
        yield SecureFleet(zookeeper_tls, fleet_zk_identity, planned, root)
    finally:
        stop_all(planned)
