"""examples/production.yaml as shipped, on the local Kubernetes (applied as every example is, ``deploy_example``,
with its spec.tls Secrets made from examples/production-certificates.yaml as cert-manager would): on the bookie
port, a client configured as the example's header configures a Pulsar broker (the Secret of the file's broker
Certificate mounted: its role broker, its ca.crt as the trust; v2 frames inside TLS, Pulsar's default) writes and
reads. Every other client reads none of its entries and stores none of its own, from this machine, where no
NetworkPolicy stands in the way (as for any pod the policy admits, or a cluster whose network plugin ignores it):
plaintext (v3 and v2), TLS without a client certificate, a certificate of the same CA with another role (a tenant
that obtained one), and a broker certificate of another CA."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from bookie.client import BookKeeper, ClientConfig
from bookie.client.errors import BKError, BookieError
from bookie.protocol.codes import StatusCode
from bookie.tls import ClientTLS, roles_from_ou
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.examples.cert_manager import role
from tests.examples.conftest import EXAMPLES, deploy_example
from tests.operator.conftest import OperatorProcess, condition, wait_ready
from tests.support.certificates import client_tls
from tests.support.kube import KubeTarget

ENTRIES = [f"entry-{i}".encode() for i in range(10)]


async def answer(bk: BookKeeper, bookie: str, ledger_id: int) -> str:
    """How ``bookie`` answers this client's read of the ledger's first entry: a status, or why there was none."""
    try:
        response = await bk.client.read_entry(bookie, ledger_id, 0)
    except BookieError as exc:
        return f"{type(exc).__name__}: {exc}"
    return StatusCode(response.status).name


async def test_only_a_broker_certificate_reads_and_writes(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess], tmp_path: Path) -> None:
    ns = kube_namespace
    operator_factory(ns)
    deployed = deploy_example(kube, ns, zookeeper, EXAMPLES / "production.yaml")
    ready = wait_ready(kube, ns, "production", timeout=420)
    valid = condition(ready, "CertificatesValid")
    assert valid is not None and valid["status"] == "True", valid
    (broker,) = [m for m in deployed.made.values() if roles_from_ou(role(m.certificate))[:1] == ["broker"]]
    assert broker.certificate["metadata"]["namespace"] == "pulsar"   # the brokers' own, where the policy admits

    def config(tls: ClientTLS | None, *, v2: bool = False) -> ClientConfig:
        return ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=f"/{ns}/ledgers", tls=tls,
                            use_v2_protocol=v2, add_timeout_s=3.0, read_timeout_s=5.0)

    # The broker, as the header configures it.
    async with BookKeeper(config(broker.client_tls(tmp_path / "broker"), v2=True)) as bk:
        handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=3)
        for entry in ENTRIES:
            await handle.add(entry)
        await handle.close()
        assert [e.payload for e in await (await bk.open_ledger(handle.ledger_id)).read(0, 9)] == ENTRIES
        ledger_id, ensemble = handle.ledger_id, handle.metadata.ensemble_at(0)
        bookies = await bk.writable_bookies()

    ca = broker.ca  # the bookie port's CA (the file's ClusterIssuer)
    trust_only = ClientTLS(trust_store=str(tmp_path / "broker" / "ca.crt"))
    # Who tries, and how each bookie answers its read: EUA (no TLS, or no admitted role), or no answer at all
    # (the TLS handshake refused: no certificate, or one that does not chain to the bookies' ca.crt).
    others: dict[str, tuple[ClientTLS | None, bool, str]] = {
        "plaintext v3": (None, False, "EUA"),
        "plaintext v2": (None, True, "EUA"),
        "TLS without a certificate": (trust_only, False, "BookieUnavailable"),
        "a tenant's certificate of the same CA": (client_tls(tmp_path / "tenant", ca, "tenant"), False, "EUA"),
        "a broker certificate of another CA": (client_tls(tmp_path / "foreign", trustme.CA(), "broker", trust=ca),
                                               False, "BookieUnavailable"),
    }
    answers: dict[str, set[str]] = {}
    written: dict[str, int] = {}
    for who, (tls, v2, _) in others.items():
        async with BookKeeper(config(tls, v2=v2)) as bk:
            answers[who] = {await answer(bk, bookie, ledger_id) for bookie in ensemble}
            with pytest.raises(BKError):
                await (await bk.open_ledger(ledger_id)).read(0, 9)
            attempt = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=3)
            written[who] = attempt.ledger_id
            with pytest.raises(BKError):
                await attempt.add(who.encode())
    assert {who: {a.split(":")[0] for a in seen} for who, seen in answers.items()} == \
        {who: {expected} for who, (_, _, expected) in others.items()}, answers

    # Nothing of theirs was stored: no bookie has an entry of the ledgers they tried to write.
    async with BookKeeper(config(broker.client_tls(tmp_path / "broker"), v2=True)) as bk:
        for who, ledger in written.items():
            for bookie in bookies:
                assert await answer(bk, bookie, ledger) in {"ENOLEDGER", "ENOENTRY"}, (who, bookie)
