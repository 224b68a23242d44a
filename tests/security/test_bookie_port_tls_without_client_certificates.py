"""TLS without client certificates (the layout of Apache Pulsar's chart): as in BookKeeper, TLS is optional per
connection, so a plaintext client is still served next to a TLS one; with our ``onlySecureClientsAllowed``
(BookKeeper 4.17 has no such key) the plaintext client gets EUA and writes nothing."""

from __future__ import annotations

import pytest
from bookie.client import BookKeeper, ClientConfig, ClientTLS
from bookie.client.errors import UnauthorizedAccess
from bookie_fleet.certificates import bookie_tls_conf

from tests.security.conftest import PKI
from tests.support.bookies import BookieFactory


def client(bookie_zk: str, root: str, tls: ClientTLS | None) -> BookKeeper:
    return BookKeeper(ClientConfig(zk_servers=bookie_zk, ledgers_root=root, tls=tls, add_timeout_s=5.0))


@pytest.mark.parametrize("only_secure", [False, True])
async def test_plaintext_clients_next_to_tls_ones(bookie_factory: BookieFactory, pki: PKI, only_secure: bool) -> None:
    conf = bookie_tls_conf(pki.bookie, onlySecureClientsAllowed=only_secure)
    bookies = bookie_factory(1, **conf)
    async with client(bookies.zk_connect, bookies.ledgers_root, pki.client_tls(None)) as bk:
        lh = await bk.create_ledger(1, 1, 1, password=b"pw")
        assert await lh.add(b"over tls") == 0
        await lh.close()
    async with client(bookies.zk_connect, bookies.ledgers_root, None) as bk:
        plain = await bk.create_ledger(1, 1, 1, password=b"pw")
        if only_secure:
            with pytest.raises(UnauthorizedAccess, match="EUA"):
                await plain.add(b"in plaintext")
        else:
            assert await plain.add(b"in plaintext") == 0
            await plain.close()
    async with client(bookies.zk_connect, bookies.ledgers_root, pki.client_tls(None)) as bk:
        assert [e.payload for e in await (await bk.open_ledger(lh.ledger_id, b"pw")).read(0, 0)] == [b"over tls"]
        if only_secure:
            response = await bk.client.read_entry(bookies.ids[0], plain.ledger_id, 0)
            assert response.status.name in ("ENOLEDGER", "ENOENTRY")  # nothing of the refused add was stored
