"""Where the bookie port requires authentication (here the keys the operator writes for
``spec.tls.clientAuthentication``), a connection that has not authenticated may hold at most 64 KiB of a frame:
its first frame must be START_TLS. A plaintext client sending the start of a 1 MiB frame is closed as soon as it
passes that, and counted; a client with a trusted certificate is served as before."""

from __future__ import annotations

import asyncio
import shutil
import struct
from pathlib import Path

from tests.bookie.test_connection_limits import _closed_by_bookie, _hits
from tests.security.conftest import PKI
from tests.security.test_bookie_port_client_authentication_refuses_plaintext import client, operator_keys
from tests.support.bookies import BookieFactory

FRAME = 1024 * 1024
SENT = 128 * 1024   # past the 64 KiB a connection may hold before authentication


async def test_an_unauthenticated_connection_holds_at_most_64_kib(bookie_factory: BookieFactory, pki: PKI,
                                                                 tmp_path: Path) -> None:
    secret = tmp_path / "bk-tls"
    secret.mkdir()
    for name, source in (("tls.crt", pki.bookie.certificate), ("tls.key", pki.bookie.key), ("ca.crt", pki.ca)):
        shutil.copy(source, secret / name)
    bookies = bookie_factory(1, **operator_keys(secret))
    host, port = bookies.ids[0].rsplit(":", 1)

    stream = await asyncio.open_connection(host, int(port))
    try:
        stream[1].write(struct.pack(">i", FRAME) + bytes(SENT))
        await stream[1].drain()
    except ConnectionError:
        pass  # reset while sending: closed already
    assert await _closed_by_bookie(stream)
    stream[1].close()
    assert (await _hits(bookies[0].http_url))["bookie_limit_unauthenticatedBufferBytes_hits_total"] == 1

    async with client(bookies.zk_connect, bookies.ledgers_root, pki.client_tls(pki.writer)) as bk:
        lh = await bk.create_ledger(1, 1, 1, password=b"pw")
        assert await lh.add(b"trusted") == 0
        await lh.close()
