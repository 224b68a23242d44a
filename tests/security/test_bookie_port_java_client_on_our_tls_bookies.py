"""Apache BookKeeper's Java client, configured for TLS with a client certificate as a Pulsar broker is
(``tlsProviderFactoryClass``, PEM ``clientKeyStore``/``tlsCertificatePath``/``clientTrustStore``), writes and
reads on three of our bookies that require TLS and an authorized certificate role: over v3, and over v2
(START_TLS in v3, then v2 frames inside TLS)."""

from __future__ import annotations

import pytest
from bookie.client import BookKeeper

from tests.security.conftest import PKI
from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness


@pytest.mark.parametrize("protocol", ["v3", "v2"])
async def test_java_client_with_an_allowed_role_writes_and_reads(secured_ours: BookieCluster, pki: PKI,
                                                                  protocol: str) -> None:
    tls = pki.java_properties(pki.writer)
    written = await run_harness(secured_ours, "write", protocol, "3", "3", "2", "CRC32C", "pw", "100",
                                properties=tls)
    ledger_id, last, length = (int(x) for x in written.result)
    assert last == 99
    read = await run_harness(secured_ours, "read", protocol, str(ledger_id), "pw", "recover", properties=tls)
    assert read.entries() == {i: f"java-{i}" for i in range(100)}
    # Our client, with its own certificate of an allowed role, reads the same entries back.
    async with BookKeeper(secured_ours.client_config(tls=pki.client_tls(pki.writer),
                                                     use_v2_protocol=protocol == "v2")) as bk:
        lh = await bk.open_ledger(ledger_id, b"pw")
        assert lh.length == length
        assert [e.payload for e in await lh.read(0, 99)] == [b"java-%d" % i for i in range(100)]
