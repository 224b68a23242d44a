"""``spec.tls.clientAuthentication: true`` without ``authorizedRoles`` means what the CRD says, end to end: a
real bookie started with the keys the operator writes for it serves no plaintext request (EUA, nothing stored)
and no TLS session without a client certificate that chains to the bookie Secret's ca.crt (the handshake
fails); a client with a trusted certificate is served.

BookKeeper's ``tlsClientAuthentication`` alone leaves plaintext open (TLS is optional per connection), so the
operator adds ``onlySecureClientsAllowed``; the bookie is started from the operator's own keys, with only the
Secret's mount directory replaced by the test PKI's files in cert-manager's layout."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper, ClientConfig, ClientTLS
from bookie.client.errors import BKError, UnauthorizedAccess
from bookie.protocol.codes import StatusCode
from bookie_operator import builders

from tests.operator.helpers import spec
from tests.security.conftest import PKI
from tests.support.bookies import BookieFactory

SECURITY_KEYS = ("tls", "onlySecure", "bookieAuth", "authorizedRoles")


def operator_keys(secret_dir: Path) -> dict[str, Any]:
    """The bookie-port keys the operator writes for clientAuthentication, pointing at ``secret_dir``."""
    conf = builders.bookie_config(spec(tls={"bookie": {"secretName": "bk-tls"}, "clientAuthentication": True}))
    mounted = builders.tls_dir("bookie")
    return {k: v.replace(mounted, str(secret_dir)) if isinstance(v, str) else v
            for k, v in conf.items() if k.startswith(SECURITY_KEYS)}


def client(bookie_zk: str, root: str, tls: ClientTLS | None) -> BookKeeper:
    return BookKeeper(ClientConfig(zk_servers=bookie_zk, ledgers_root=root, tls=tls, add_timeout_s=3.0))


async def test_only_clients_with_a_trusted_certificate_are_served(bookie_factory: BookieFactory, pki: PKI,
                                                                  tmp_path: Path) -> None:
    secret = tmp_path / "bk-tls"  # the bookie Secret as mounted: tls.crt, tls.key, ca.crt
    secret.mkdir()
    for name, source in (("tls.crt", pki.bookie.certificate), ("tls.key", pki.bookie.key), ("ca.crt", pki.ca)):
        shutil.copy(source, secret / name)
    bookies = bookie_factory(1, **operator_keys(secret))
    zk, root, bookie_id = bookies.zk_connect, bookies.ledgers_root, bookies.ids[0]

    refused: dict[str, int] = {}
    async with client(zk, root, None) as bk:
        lh = await bk.create_ledger(1, 1, 1, password=b"pw")
        with pytest.raises(UnauthorizedAccess, match="EUA"):
            await lh.add(b"in plaintext")
        refused["plaintext"] = lh.ledger_id
    for who, tls in (("no certificate", pki.client_tls(None)), ("untrusted", pki.client_tls(pki.untrusted))):
        async with client(zk, root, tls) as bk:
            lh = await bk.create_ledger(1, 1, 1, password=b"pw")
            with pytest.raises(BKError):
                await lh.add(who.encode())
            refused[who] = lh.ledger_id

    async with client(zk, root, pki.client_tls(pki.writer)) as bk:
        lh = await bk.create_ledger(1, 1, 1, password=b"pw")
        assert await lh.add(b"trusted") == 0
        await lh.close()
        assert [e.payload for e in await (await bk.open_ledger(lh.ledger_id, b"pw")).read(0, 0)] == [b"trusted"]
        for who, ledger_id in refused.items():
            response = await bk.client.read_entry(bookie_id, ledger_id, 0)
            assert response.status in (StatusCode.ENOLEDGER, StatusCode.ENOENTRY), who  # nothing was stored
