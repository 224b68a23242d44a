"""Fixtures of the bookie port's tests (``test_bookie_port_*``): three of our bookies and three of Apache
BookKeeper's, each with TLS and BookKeeper's certificate-role authorization (``BookieAuthZFactory``), driven by
BookKeeper's Java client and by ours; and START_TLS as raw bytes.

One test PKI per session (``cryptography``): a CA, the bookies' certificate, client certificates with and
without an allowed role in their OU, and one from a CA nobody trusts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper, ClientTLS
from bookie.metadata.store import MetadataStore
from bookie.protocol.codes import StatusCode
from bookie_fleet.certificates import Issued, LocalCA, bookie_tls_conf, java_client_tls_properties, roles_ou
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.java_bookies import BookieCluster, start_cluster
from tests.support.raw_client import RawConnection

# The roles the secured bookies admit; a writer's certificate carries "writer" first.
AUTHORIZED_ROLES = ["writer", "bookie"]


@dataclass(frozen=True)
class PKI:
    ca: Path
    bookie: Issued  # every secured bookie's certificate, role "bookie"
    writer: Issued  # OU 0:writer,reader;1:test-cluster: admitted
    auditor: Issued  # OU 0:auditor,writer: its first role is not admitted (BookKeeper checks the first only)
    no_ou: Issued  # no OU at all
    untrusted: Issued  # role "writer", but signed by a CA the bookies do not trust

    def client_tls(self, who: Issued | None) -> ClientTLS:
        """Our client's TLS settings trusting the test CA and presenting ``who``'s certificate."""
        if who is None:
            return ClientTLS(trust_store=str(self.ca))
        return ClientTLS(trust_store=str(self.ca), client_authentication=True,
                         certificate_path=str(who.certificate), key_store=str(who.key))

    def java_properties(self, who: Issued | None) -> dict[str, str]:
        """BookKeeper's client keys for the same (a Java client configured as a Pulsar broker does it)."""
        return java_client_tls_properties(who, self.ca)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    base = tmp_path_factory.mktemp("pki")
    ca = LocalCA(base / "ca")
    other = LocalCA(base / "other-ca", "a CA the bookies do not trust")
    return PKI(
        ca=ca.ca,
        bookie=ca.issue("bookie", "bookie", ou=roles_ou(["bookie"]), ips=("127.0.0.1",)),
        writer=ca.issue("writer", "writer", ou=roles_ou(["writer", "reader"], "test-cluster")),
        auditor=ca.issue("auditor", "auditor", ou=roles_ou(["auditor", "writer"])),
        no_ou=ca.issue("no-ou", "no-ou"),
        untrusted=other.issue("untrusted", "untrusted", ou=roles_ou(["writer"])),
    )


def secured_conf(pki: PKI, **extra: Any) -> dict[str, Any]:
    return bookie_tls_conf(pki.bookie, roles=AUTHORIZED_ROLES, **extra)


def _secured_cluster(kind: str, first_host: int, zookeeper: ZooKeeperServer, pki: PKI,
                     tmp_path_factory: pytest.TempPathFactory) -> BookieCluster:
    return start_cluster(kind, 3, tmp_path_factory.mktemp(f"secured-{kind}"), zookeeper, first_host,
                         **secured_conf(pki))


@pytest.fixture(scope="session")
def secured_ours(zookeeper: ZooKeeperServer, pki: PKI,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[BookieCluster]:
    """Three of our bookies: TLS, client certificates required, roles writer and bookie admitted."""
    cluster = _secured_cluster("python", 81, zookeeper, pki, tmp_path_factory)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def secured_java(zookeeper: ZooKeeperServer, pki: PKI,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[BookieCluster]:
    """Three Apache BookKeeper 4.17 bookies with the same keys and files (PEM)."""
    cluster = _secured_cluster("java", 86, zookeeper, pki, tmp_path_factory)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["python", "java"])
def secured(request: pytest.FixtureRequest) -> BookieCluster:
    """Each secured cluster in turn: the same behaviour is specified for both implementations."""
    cluster: BookieCluster = request.getfixturevalue(f"secured_{'ours' if request.param == 'python' else 'java'}")
    return cluster


async def first_entry_statuses(cluster: BookieCluster, pki: PKI, ledger_id: int) -> set[StatusCode]:
    """The status every bookie of the cluster answers an authorized client asking for entry 0 of
    ``ledger_id``: ENOLEDGER/ENOENTRY everywhere means nothing of it was written."""
    async with BookKeeper(cluster.client_config(tls=pki.client_tls(pki.writer))) as bk:
        responses = await asyncio.gather(*(bk.client.read_entry(b, ledger_id, 0) for b in cluster.bookie_ids))
    return {r.status for r in responses}


NOTHING_STORED = {StatusCode.ENOLEDGER, StatusCode.ENOENTRY}


# BKPacketHeader{version=3, operation=START_TLS (9), txnId=1} + startTLSRequest (field 106, empty).
START_TLS = bytes.fromhex("0000000b" "0a06" "080310091801" "d20600")
# The same header, status EOK, startTLSResponse (field 106, empty).
START_TLS_OK = bytes.fromhex("0000000d" "0a06" "080310091801" "1000" "d20600")
# The same header, status EBADREQ (404): no TLS on that bookie.
START_TLS_EBADREQ = bytes.fromhex("0000000b" "0a06" "080310091801" "109403")


async def open_raw(bookie_id: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = bookie_id.rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))


async def start_tls(bookie_id: str, pki: PKI, version: int) -> RawConnection:
    reader, writer = await open_raw(bookie_id)
    writer.write(START_TLS)
    assert await asyncio.wait_for(reader.readexactly(len(START_TLS_OK)), 10) == START_TLS_OK
    context = pki.client_tls(pki.writer).load()
    await asyncio.wait_for(writer.start_tls(context), 10)
    return RawConnection(reader, writer, version)


async def registration_of(cluster: BookieCluster, bookie_id: str) -> bytes:
    async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store:
        data = await store.bookie_service_info(bookie_id)
    assert data is not None, f"{bookie_id} is not registered"
    return data
