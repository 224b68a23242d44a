"""With ``tlsClientAuthentication`` the client certificate is required and verified against
``tlsTrustStore``: a certificate from another CA, or none, fails the TLS handshake (as with BookKeeper's
``ClientAuth.REQUIRE``), so the client is refused before any request and writes nothing, on our bookies as on
Apache BookKeeper's. Our bookie logs the refused handshake with the peer and keeps serving others."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bookie.client import BookKeeper
from bookie.client.errors import BKError

from tests.security.conftest import NOTHING_STORED, PKI, first_entry_statuses
from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness


@pytest.mark.parametrize("who", ["untrusted", "no certificate"])
async def test_our_client_is_refused_at_the_handshake(secured: BookieCluster, pki: PKI, who: str) -> None:
    tls = pki.client_tls(pki.untrusted if who == "untrusted" else None)
    async with BookKeeper(secured.client_config(tls=tls, add_timeout_s=3.0)) as bk:
        lh = await bk.create_ledger(3, 2, 2, password=b"pw")
        with pytest.raises(BKError):
            await lh.add(b"refused")
    assert await first_entry_statuses(secured, pki, lh.ledger_id) <= NOTHING_STORED
    async with BookKeeper(secured.client_config(tls=pki.client_tls(pki.writer))) as bk:
        ok = await bk.create_ledger(3, 2, 2, password=b"pw")
        assert await ok.add(b"served") == 0
        await ok.close()


async def test_the_java_client_with_an_untrusted_certificate_writes_nothing(secured: BookieCluster,
                                                                           pki: PKI) -> None:
    run = await run_harness(secured, "write", "v3", "3", "2", "2", "CRC32C", "pw", "1",
                            properties=pki.java_properties(pki.untrusted), may_refuse=True)
    assert run.refused is not None and run.values("ACKED") == []
    (ledger,) = run.values("LEDGER")
    assert await first_entry_statuses(secured, pki, int(ledger[0])) <= NOTHING_STORED


async def test_our_bookie_logs_the_refused_handshake_with_the_peer(secured_ours: BookieCluster, pki: PKI) -> None:
    async with BookKeeper(secured_ours.client_config(tls=pki.client_tls(pki.untrusted), add_timeout_s=3.0)) as bk:
        lh = await bk.create_ledger(3, 3, 3, password=b"pw")
        with pytest.raises(BKError):
            await lh.add(b"refused")
    logs = "\n".join([await asyncio.to_thread(Path(b.log_path).read_text) for b in secured_ours.bookies])
    assert "refused TLS handshake from ('127.0.0.1'," in logs
    assert "its certificate does not verify against tlsTrustStore" in logs
