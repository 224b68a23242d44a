"""The operator's admin client authenticates to an HTTPS bookie by its certificate alone (spec.tls.adminClient):
with the certificate and no token it switches the bookie read-only and back, and the bookie's audit log names
the certificate; without it the same call is refused 401 and the bookie stays writable."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme
from bookie_operator.bookie_client import BookieAdmin, BookieApiError, admin_ssl_context

from tests.support.admin_api import audit_records, write_ca, write_identity
from tests.support.bookies import BookieFactory


async def test_the_operator_authenticates_by_certificate_alone(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    ca = trustme.CA()
    bookie = bookie_factory(1, start=False)[0]
    server = write_identity(ca, tmp_path, "bookie", "bk-0.bk-headless.ns.svc.cluster.local")
    bookie.overrides.update(httpServerTlsEnable=True, httpServerTlsCertificatePath=str(server.cert),
                            httpServerTlsKeyPath=str(server.key),
                            httpServerTlsTrustStorePath=str(write_ca(ca, tmp_path / "ca.crt")),
                            httpServerAllowedRoles="bookie-operator")
    bookie.start()
    operator = ca.issue_cert("bookie-operator.test", common_name="bookie-operator",
                             organization_unit_name="0:bookie-operator")
    ca_pem = ca.cert_pem.bytes()
    with_certificate = admin_ssl_context(ca_pem, b"".join(p.bytes() for p in operator.cert_chain_pems),
                                         operator.private_key_pem.bytes())
    async with aiohttp.ClientSession() as http:
        def admin(context: ssl.SSLContext) -> BookieAdmin:
            return BookieAdmin(http, bookie.address, bookie.http_port, token=None, ssl_context=context,
                               server_hostname="bk-0.bk-headless.ns.svc.cluster.local")

        anonymous = admin(admin_ssl_context(ca_pem))
        with pytest.raises(BookieApiError) as refused:
            await anonymous.set_read_only(True)
        assert refused.value.status == 401
        assert (await anonymous.state())["readOnly"] is False

        by_certificate = admin(with_certificate)
        assert await by_certificate.set_read_only(True) is True
        assert (await by_certificate.state())["readOnly"] is True
        assert await by_certificate.set_read_only(False) is False
    records = audit_records(bookie.log_path)
    assert [r["status"] for r in records] == [401, 200, 200]
    assert all(r["who"].endswith("CN=bookie-operator") for r in records[1:]), records
