"""A client the bookie does not authorize gets BookKeeper's EUA and writes nothing, on our bookies as on
Apache BookKeeper's (the same keys): a certificate whose first OU role is not admitted, a certificate without
an OU, a client that never starts TLS. The bookie logs the refusal with the peer and goes on serving others."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bookie.client import BookKeeper, ClientConfig
from bookie.client.errors import UnauthorizedAccess
from bookie.protocol.codes import StatusCode

from tests.security.conftest import NOTHING_STORED, PKI, first_entry_statuses, secured_conf
from tests.support.bookies import BookieFactory
from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness
from tests.support.raw_client import MASTER_KEY, entry

UNAUTHORIZED_ACCESS = -102  # BKException.Code.UnauthorizedAccessException


@pytest.mark.parametrize("who", ["auditor", "no_ou", "plaintext"])
async def test_our_client_gets_eua_and_writes_nothing(secured: BookieCluster, pki: PKI, who: str) -> None:
    tls = None if who == "plaintext" else pki.client_tls(getattr(pki, who))
    async with BookKeeper(secured.client_config(tls=tls)) as bk:
        lh = await bk.create_ledger(3, 2, 2, password=b"pw")
        with pytest.raises(UnauthorizedAccess, match="EUA"):
            await lh.add(b"refused")
    assert await first_entry_statuses(secured, pki, lh.ledger_id) <= NOTHING_STORED
    # The bookies go on serving an authorized client.
    async with BookKeeper(secured.client_config(tls=pki.client_tls(pki.writer))) as bk:
        ok = await bk.create_ledger(3, 2, 2, password=b"pw")
        assert await ok.add(b"served") == 0
        await ok.close()


@pytest.mark.parametrize("who", ["auditor", "plaintext"])
async def test_the_java_client_gets_eua_and_writes_nothing(secured: BookieCluster, pki: PKI, who: str) -> None:
    properties = {} if who == "plaintext" else pki.java_properties(pki.auditor)
    run = await run_harness(secured, "write", "v3", "3", "2", "2", "CRC32C", "pw", "5", properties=properties,
                            may_refuse=True)
    assert run.refused == (UNAUTHORIZED_ACCESS, "BKUnauthorizedAccessException")
    assert run.values("ACKED") == []
    (ledger,) = run.values("LEDGER")
    assert await first_entry_statuses(secured, pki, int(ledger[0])) <= NOTHING_STORED


async def test_a_refused_connection_is_logged_once_with_the_peer(bookie_factory: BookieFactory, pki: PKI) -> None:
    (bookie,) = bookie_factory(1, **secured_conf(pki)).bookies
    async with BookKeeper(ClientConfig(zk_servers=bookie.zk_connect, ledgers_root=bookie.ledgers_root,
                                       tls=pki.client_tls(pki.auditor))) as bk:
        answers = await asyncio.gather(*(bk.client.add_entry(bookie.bookie_id, 1, i, MASTER_KEY, entry(1, i, b"x"))
                                         for i in range(20)))
    assert {a.status for a in answers} == {StatusCode.EUA}
    log = await asyncio.to_thread(Path(bookie.log_path).read_text)
    lines = [line for line in log.splitlines() if "bookie.security" in line]
    assert len(lines) == 1, lines
    assert "refused unauthorized from ('127.0.0.1'," in lines[0]
    assert "certificate role 'auditor' is not in authorizedRoles ['writer', 'bookie']" in lines[0]
