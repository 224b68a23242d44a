"""START_TLS byte by byte, the same from our bookie and from Apache BookKeeper's: the v3 request, the
plaintext EOK answer, then TLS on the same socket with v2 (or v3) frames inside; EBADREQ from a bookie
without TLS; EUA to what an unauthenticated connection sends (BookKeeper's AuthHandler)."""

from __future__ import annotations

import asyncio
import ssl
import struct

import pytest
from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.codes import OperationType, StatusCode, V2Rc

from tests.security.conftest import PKI, START_TLS, START_TLS_EBADREQ, open_raw, start_tls
from tests.support.bookies import BookieSet
from tests.support.java_bookies import BookieCluster
from tests.support.raw_client import MASTER_KEY, RawConnection, entry


@pytest.mark.parametrize("version", [2, 3])
async def test_start_tls_answer_then_frames_inside_tls(secured: BookieCluster, pki: PKI, version: int) -> None:
    bookie_id = secured.bookie_ids[0]
    conn = await start_tls(bookie_id, pki, version)
    async with conn:
        tls = conn.writer.get_extra_info("ssl_object")
        assert isinstance(tls, ssl.SSLObject) and tls.version() in ("TLSv1.2", "TLSv1.3")
        ledger = 900 + version
        added = await conn.call(m.AddRequest(conn.wire(), ledger, 0, MASTER_KEY, entry(ledger, 0, b"inside")))
        assert added.status == StatusCode.EOK
        read = await conn.call(m.ReadRequest(conn.wire(), ledger, 0))
        assert read.status == StatusCode.EOK and bytes(read.body) == entry(ledger, 0, b"inside")


async def test_a_bookie_without_tls_answers_ebadreq(bookies: BookieSet) -> None:
    reader, writer = await open_raw(bookies.ids[0])
    try:
        writer.write(START_TLS)
        assert await asyncio.wait_for(reader.readexactly(len(START_TLS_EBADREQ)), 10) == START_TLS_EBADREQ
    finally:
        writer.close()


async def test_requests_before_tls_get_eua(secured: BookieCluster) -> None:
    bookie_id = secured.bookie_ids[0]
    async with await RawConnection.open(bookie_id, 3) as v3:
        for request, op in ((m.ReadRequest(v3.wire(), 1, 0), OperationType.READ_ENTRY),
                            (m.GetBookieInfoRequest(v3.wire(), 3), OperationType.GET_BOOKIE_INFO),
                            (m.AuthRequest(v3.wire(), "AuthDisabledPlugin", b""), OperationType.AUTH)):
            await v3.send_raw(client_codec.encode_request(request))
            # The echoed header and EUA, nothing else (BookKeeper's AuthHandler.ServerSideHandler).
            answer = client_codec.decode_response(await v3.read_frame())
            assert answer == m.ErrorResponse(request.wire, StatusCode.EUA, op)
    async with await RawConnection.open(bookie_id, 2) as v2:
        for v2_request in (m.AddRequest(v2.wire(), 7, 0, MASTER_KEY, entry(7, 0, b"plain")),
                           m.ReadRequest(v2.wire(), 7, 0)):
            await v2.send_raw(client_codec.encode_request(v2_request))
            rc, ledger_id, entry_id = struct.unpack_from(">iqq", await v2.read_frame(), 4)
            assert (rc, ledger_id, entry_id) == (V2Rc.EUA, 7, 0)
        # Any other v2 request closes the connection (a FIN from ours, a reset from BookKeeper's).
        await v2.send_raw(client_codec.encode_request(m.AuthRequest(v2.wire(), "AuthDisabledPlugin", b"")))
        assert await closed(v2.reader)


async def test_frames_sent_between_start_tls_and_the_handshake_close_the_connection(
        secured_ours: BookieCluster) -> None:
    reader, writer = await open_raw(secured_ours.bookie_ids[0])
    try:
        read = client_codec.encode_request(m.ReadRequest(m.Wire.v3(2), 1, 0))
        writer.write(START_TLS + read)
        assert await closed(reader)
    finally:
        writer.close()


async def closed(reader: asyncio.StreamReader) -> bool:
    """The peer closed the connection: end of stream, or a reset, with nothing read before."""
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except ConnectionResetError:
        return True
