"""Our client speaks BookKeeper's START_TLS to Apache BookKeeper's bookies configured with TLS (PEM files)
and BookieAuthZFactory: with a certificate of an allowed role it writes and reads, over v3 and over v2; the
Java client reads what it wrote."""

from __future__ import annotations

import pytest
from bookie.client import BookKeeper

from tests.security.conftest import PKI
from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness


@pytest.mark.parametrize("protocol", ["v3", "v2"])
async def test_our_client_with_an_allowed_role_writes_and_reads(secured_java: BookieCluster, pki: PKI,
                                                                 protocol: str) -> None:
    config = secured_java.client_config(tls=pki.client_tls(pki.writer), use_v2_protocol=protocol == "v2")
    async with BookKeeper(config) as bk:
        lh = await bk.create_ledger(3, 2, 2, password=b"pw")
        for i in range(100):
            await lh.add(b"py-%d" % i)
        await lh.close()
        again = await bk.open_ledger(lh.ledger_id, b"pw")
        assert [e.payload for e in await again.read(0, 99)] == [b"py-%d" % i for i in range(100)]
    read = await run_harness(secured_java, "read", protocol, str(lh.ledger_id), "pw", "norecover",
                             properties=pki.java_properties(pki.writer))
    assert read.entries() == {i: f"py-{i}" for i in range(100)}
