"""A Pulsar broker configured with its ``bookkeeperTLS*`` keys (``BookieClientTLS``) writes to three bookies that
serve nothing but TLS clients whose certificate role they admit (``tlsClientAuthentication``,
``BookieAuthZFactory``, ``authorizedRoles=broker,bookie``, as ``examples/production.yaml``), ours and Apache
BookKeeper's alike (the same keys and PEM files): a broker with a ``broker`` certificate produces and consumes
byte-identical messages; a broker whose certificate has another role stores nothing, and the bookies log why. On
ours, the bookies' own counters also show that no plaintext request, failed handshake or refused role came from
the admitted broker."""

from __future__ import annotations

import asyncio
import re
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper, ClientTLS
from bookie.protocol.codes import StatusCode
from bookie_fleet.certificates import Issued, LocalCA, bookie_tls_conf, roles_ou
from bookie_fleet.pulsar import BookieClientTLS, Producer, PulsarBroker, consume
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.pulsar.conftest import BOOKIE_CONF, JAVA_CONF
from tests.support.java_bookies import BookieCluster, start_cluster
from tests.support.victims import JAVA_METRICS, METRICS_CONF

# 127.0.0.76-78 and .94-96: apart from the other bookie sets of the tests run beside these (conftest.FIRST_HOST)
FIRST_HOST = {"python": 76, "java": 94}
ROLES = ["broker", "bookie"]  # the broker's role, and the bookies' own (re-replication)
COUNT = 400
REFUSALS = re.compile(r'^bookie_connection_refusals_total\{reason="([^"]+)"\} (\S+)$', re.MULTILINE)
# How each implementation's bookie logs the refused broker's role.
REFUSED_ROLE_LOGGED = {"python": "certificate role 'analytics' is not in authorizedRoles ['broker', 'bookie']",
                       "java": "Cert role [analytics] doesn't match allowedRoles list [broker, bookie]"}
WRITE_BYTES = re.compile(r"^bookie_WRITE_BYTES(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class SecuredBookies:
    cluster: BookieCluster
    broker: Issued  # OU 0:broker: admitted
    analytics: Issued  # OU 0:analytics: a certificate of the same CA, of a role the bookies do not admit
    base: Path


@pytest.fixture(scope="module", params=["python", "java"])
def secured(request: pytest.FixtureRequest, zookeeper: ZooKeeperServer,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBookies]:
    kind = request.param
    base = tmp_path_factory.mktemp(f"pulsar-client-certificates-{kind}")
    ca = LocalCA(base / "pki")
    bookie = ca.issue("bookie", "bookie", ou=roles_ou(["bookie"]), ips=("127.0.0.1",))
    conf: dict[str, Any] = {**bookie_tls_conf(bookie, roles=ROLES), **METRICS_CONF,
                            **({**JAVA_CONF, **JAVA_METRICS} if kind == "java" else {})}
    cluster = start_cluster(kind, 3, base / "bookies", zookeeper, FIRST_HOST[kind], **BOOKIE_CONF, **conf)
    try:
        yield SecuredBookies(cluster, ca.issue("broker", "pulsar-broker", ou=roles_ou(["broker"])),
                             ca.issue("analytics", "analytics", ou=roles_ou(["analytics"])), base)
    finally:
        cluster.stop()


def start_broker(secured: SecuredBookies, name: str, certificate: Issued) -> PulsarBroker:
    broker = PulsarBroker(secured.base / name, secured.cluster.zk_connect, secured.cluster.ledgers_root,
                          chroot=f"/pulsar-{name}-{uuid.uuid4().hex[:8]}",
                          bookie_tls=BookieClientTLS.of(certificate))
    broker.setup_metadata()
    return broker.start()


def metrics(cluster: BookieCluster) -> tuple[dict[str, float], float]:
    """``bookie_connection_refusals_total`` of every bookie summed by reason (ours count them; Apache BookKeeper's
    do not), and their ``bookie_WRITE_BYTES`` (both implementations)."""
    refused: dict[str, float] = {}
    written = 0.0
    for bookie in cluster.bookies:
        with urllib.request.urlopen(f"{bookie.http_url}/metrics", timeout=10) as r:
            text = r.read().decode()
        for reason, value in REFUSALS.findall(text):
            refused[reason] = refused.get(reason, 0) + float(value)
        written += sum(float(v) for v in WRITE_BYTES.findall(text))
    return refused, written


async def first_entries(cluster: BookieCluster, admitted: Issued, ledgers: list[int]) -> set[StatusCode]:
    """What every bookie answers our client (with an admitted certificate) asking for entry 0 of each ledger."""
    tls = ClientTLS(trust_store=str(admitted.ca), client_authentication=True,
                    certificate_path=str(admitted.certificate), key_store=str(admitted.key))
    async with BookKeeper(cluster.client_config(tls=tls)) as bk:
        answers = await asyncio.gather(*(bk.client.read_entry(b, lid, 0)
                                         for b in cluster.bookie_ids for lid in ledgers))
    return {a.status for a in answers}


def test_a_broker_certificate_produces_and_consumes_over_tls_only(secured: SecuredBookies) -> None:
    refused_before, written_before = metrics(secured.cluster)
    broker = start_broker(secured, "broker", secured.broker)
    try:
        topic = "public/default/over-tls"
        broker.admin("PUT", f"persistent/{topic}/subscription/check")
        producer = Producer(broker, topic, COUNT, keys=8, max_size=3000)
        producer.finish()
        assert not producer.failed, list(producer.failed.items())[:5]
        assert sorted(producer.acked) == list(range(COUNT))
        # Read before the consumer: once it has acknowledged everything, Pulsar may trim the consumed ledgers off
        # the topic (retention 0), leaving only a ledger with no entry yet. A loaded run that listed them after it
        # found every bookie answering "no such ledger" for every one, most likely so.
        ledgers = broker.ledgers_of(topic)
        got = consume(broker, topic, "check", COUNT)
    finally:
        broker.stop()
    assert [seq for seq, _, _ in got] == list(range(COUNT)), "messages lost, duplicated or reordered"
    for seq, key, sha in got:
        assert (key, sha) == (producer.acked[seq].key, producer.acked[seq].sha256), f"message {seq} changed"
    # The bookies serve only admitted TLS sessions, so every entry came over one; and not one connection of
    # the broker was refused: no request in plaintext, no failed handshake, no refused role.
    assert ledgers
    assert asyncio.run(first_entries(secured.cluster, secured.broker, ledgers)) >= {StatusCode.EOK}
    refused, written = metrics(secured.cluster)
    assert refused == refused_before   # ours: not one connection of the broker refused (Java's: nothing counted)
    assert written - written_before >= 2 * COUNT  # every message (1 byte or more) on two bookies at least


def test_a_certificate_of_another_role_stores_nothing(secured: SecuredBookies) -> None:
    refused_before, written_before = metrics(secured.cluster)
    broker = start_broker(secured, "analytics", secured.analytics)
    try:
        producer = Producer(broker, "public/default/refused", 20, keys=4, max_size=500)
        try:
            # Until the broker's BookKeeper client has had writes refused by two bookies (an ensemble's worth):
            # the topic cannot be written, and Pulsar's client would only give up on it after its own timeouts.
            producer.wait_for(lambda: refused_writes(secured, broker, refused_before), 180,
                              "the bookies to refuse the broker's writes")
        finally:
            producer.kill()
    finally:
        broker.stop()
    assert producer.acked == {}, "a message was acknowledged by bookies that refuse the broker's role"
    refused, written = metrics(secured.cluster)
    assert written == written_before, "the bookies stored bytes of a broker they refuse"
    logs = "".join(Path(b.log_path).read_text() for b in secured.cluster.bookies)
    assert REFUSED_ROLE_LOGGED[secured.cluster.kind] in logs, "the bookies did not log the refused role"
    if secured.cluster.kind == "java":
        return  # Apache BookKeeper counts no refusals
    # Refused for its role, after TLS handshakes that succeeded, and never for a request in plaintext. A handshake
    # may also end half-way when the broker stops while its client connects again (seen once: "connection lost
    # during the TLS handshake: ConnectionResetError()" as the broker stopped): that refusal is about the broker
    # going away, not about what it sent.
    changed = {k: v - refused_before.get(k, 0) for k, v in refused.items() if v != refused_before.get(k, 0)}
    assert changed.get("unauthorized", 0) > 0 and changed.keys() <= {"unauthorized", "TLS_handshake"}, changed


def refused_writes(secured: SecuredBookies, broker: PulsarBroker, refused_before: dict[str, float]) -> bool:
    """The broker says its writes were refused (and, on ours, two bookies counted the refusal)."""
    logged = "Unauthorized access exception on write" in broker.log_path.read_text()
    if secured.cluster.kind == "java":
        return logged
    refused, _ = metrics(secured.cluster)
    return refused.get("unauthorized", 0) - refused_before.get("unauthorized", 0) >= 2 and logged
