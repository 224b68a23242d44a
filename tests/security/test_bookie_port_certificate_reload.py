"""``tlsCertFilesRefreshDurationSeconds``: the bookie rereads its certificate files when they change, and new
connections get the new certificate while established ones keep working; a rotation caught half done (a
certificate without its key) keeps the previous certificate, with one error in the log, until the files
agree again."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie_fleet.certificates import LocalCA, roles_ou
from cryptography import x509

from tests.security.conftest import PKI, secured_conf, start_tls
from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection

POLLS = 100  # new connections tried (or log reads), 0.2 s apart, before a change counts as not picked up
LOAD_ERROR = "do not load, keeping the previous ones"


def served_serial(conn: RawConnection) -> int:
    der = conn.writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    return int(x509.load_der_x509_certificate(der).serial_number)


async def serial_of_a_new_connection(bookie_id: str, pki: PKI) -> int:
    conn = await start_tls(bookie_id, pki, 3)
    async with conn:
        return served_serial(conn)


async def wait_for_serial(bookie_id: str, pki: PKI, wanted: int) -> int:
    for _ in range(POLLS):
        seen = await serial_of_a_new_connection(bookie_id, pki)
        if seen == wanted:
            return seen
        await asyncio.sleep(0.2)
    return seen


async def wait_for_log(path: Path, text: str) -> bool:
    for _ in range(POLLS):
        if text in await asyncio.to_thread(path.read_text):
            return True
        await asyncio.sleep(0.2)
    return False


async def test_a_rotated_certificate_is_served_to_new_connections(bookie_factory: BookieFactory, pki: PKI,
                                                                  tmp_path: Path) -> None:
    ca = LocalCA(tmp_path / "issuer")  # a second CA, trusted next to the first: a trust store is a bundle
    files = tmp_path / "files"
    first = ca.issue("bookie", "bookie", ou=roles_ou(["bookie"]), directory=files)
    first_serial = first.serial
    bundle = tmp_path / "trusted.pem"
    bundle.write_bytes(pki.ca.read_bytes() + ca.ca.read_bytes())
    trusting = dataclasses.replace(pki, ca=bundle)
    (bookie,) = bookie_factory(1, **secured_conf(pki, tlsCertificatePath=str(first.certificate),
                                                 tlsKeyStore=str(first.key),
                                                 tlsCertFilesRefreshDurationSeconds=1)).bookies

    established = await start_tls(bookie.bookie_id, trusting, 3)
    async with established:
        assert served_serial(established) == first_serial
        second_serial = ca.issue("bookie", "bookie", ou=roles_ou(["bookie"]), directory=files).serial
        assert await wait_for_serial(bookie.bookie_id, trusting, second_serial) == second_serial
        # The connection made before the rotation still works, with the certificate it got.
        info = await established.call(m.GetBookieInfoRequest(established.wire(), 3))
        assert info.status == StatusCode.EOK and served_serial(established) == first_serial

    # Half a rotation: the new certificate is in place, its key not yet. The bookie keeps the second one.
    third = ca.issue("bookie", "bookie", ou=roles_ou(["bookie"]), directory=tmp_path / "next")
    shutil.copy(third.certificate, files / "bookie.crt")
    assert await wait_for_log(bookie.log_path, LOAD_ERROR)
    assert await serial_of_a_new_connection(bookie.bookie_id, trusting) == second_serial
    await asyncio.sleep(2)  # more refresh periods see the same mismatched files: reported once only
    assert (await asyncio.to_thread(Path(bookie.log_path).read_text)).count(LOAD_ERROR) == 1
    # The rotation completes with the key: the third certificate is served.
    shutil.copy(third.key, files / "bookie.key")
    assert await wait_for_serial(bookie.bookie_id, trusting, third.serial) == third.serial
