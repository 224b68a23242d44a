"""The admin API over HTTPS from PEM files: probes and reads need no client certificate; a client certificate of
the trusted CA whose role (OU, as BookKeeper's BookieAuthZFactory reads it) is allowed may call the mutating
endpoints, another role gets 403, a certificate of another CA does not get through the handshake."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme

from tests.support.admin_api import PemIdentity, audit_records, write_ca, write_identity
from tests.support.bookies import BookieFactory, LocalBookie
from tests.support.rest import call

READ_ONLY = "/api/v1/bookie/state/readonly"


def _context(ca: Path, client: PemIdentity | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        context.load_cert_chain(client.cert, client.key)
    return context


def _https_bookie(bookie_factory: BookieFactory, ca: trustme.CA, tmp_path: Path) -> LocalBookie:
    """A bookie whose certificate names its own address, trusting ``ca`` for client certificates."""
    bookie = bookie_factory(1, start=False)[0]
    server = write_identity(ca, tmp_path, "bookie", bookie.address)
    bookie.overrides.update(httpServerTlsEnable=True, httpServerTlsCertificatePath=str(server.cert),
                            httpServerTlsKeyPath=str(server.key),
                            httpServerTlsTrustStorePath=str(write_ca(ca, tmp_path / "ca.crt")),
                            httpServerAllowedRoles="admin,operator")
    bookie.start()
    return bookie


async def test_https_with_certificate_roles(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    ca = trustme.CA()
    bookie = _https_bookie(bookie_factory, ca, tmp_path)
    ca_file = tmp_path / "ca.crt"
    assert bookie.http_url.startswith("https://")
    plain = _context(ca_file)
    admin = write_identity(ca, tmp_path, "admin", "admin.test", common_name="ops",
                           organization_unit_name="0:admin;1:fleet")
    viewer = write_identity(ca, tmp_path, "viewer", "viewer.test", common_name="viewer",
                            organization_unit_name="0:viewer,admin")

    assert (await call("GET", bookie.http_url + "/api/v1/bookie/is_ready", token=None, ssl=plain)).status == 200
    answer = await call("PUT", bookie.http_url + READ_ONLY, body={"readOnly": True}, token=None,
                        ssl=_context(ca_file, viewer))
    assert answer.status == 403
    assert answer.json()["error"] == "forbidden" and "'viewer'" in answer.json()["reason"]
    answer = await call("PUT", bookie.http_url + READ_ONLY, body={"readOnly": True}, token=None,
                        ssl=_context(ca_file, admin))
    assert answer.status == 200 and answer.json() == {"readOnly": True}
    answer = await call("PUT", bookie.http_url + READ_ONLY, body={"readOnly": False}, ssl=plain)  # the token
    assert answer.status == 200 and answer.json() == {"readOnly": False}

    refused, allowed, by_token = audit_records(bookie.log_path)
    assert refused["status"] == 403 and refused["who"].startswith("cert:") and refused["who"].endswith("CN=viewer")
    assert "'viewer' is not one of httpServerAllowedRoles" in refused["reason"]
    assert allowed["status"] == 200 and allowed["who"].endswith("OU=0:admin;1:fleet,CN=ops")
    assert by_token["who"].startswith("token:")


async def test_a_client_certificate_of_another_ca_is_refused_at_the_handshake(bookie_factory: BookieFactory,
                                                                              tmp_path: Path) -> None:
    ca = trustme.CA()
    bookie = _https_bookie(bookie_factory, ca, tmp_path)
    stranger = write_identity(trustme.CA(), tmp_path / "other", "stranger", "stranger.test",
                              organization_unit_name="0:admin")
    with pytest.raises(aiohttp.ClientError):
        await call("PUT", bookie.http_url + READ_ONLY, body={"readOnly": True}, token=None,
                   ssl=_context(tmp_path / "ca.crt", stranger))
    with pytest.raises(aiohttp.ClientError):  # plaintext HTTP to the HTTPS port
        await call("GET", bookie.http_url.replace("https://", "http://") + "/api/v1/bookie/state", token=None)
    answer = await call("GET", bookie.http_url + "/api/v1/bookie/state", ssl=_context(tmp_path / "ca.crt"))
    assert answer.json()["readOnly"] is False
