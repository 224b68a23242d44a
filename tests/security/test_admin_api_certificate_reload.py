"""The admin API's HTTPS certificate is rotated without a restart: after its files change (a Kubernetes Secret
update: a symlink swapped to a new directory), a new connection gets the new certificate within
``tlsCertFilesRefreshDurationSeconds``, the same process serves it, and authenticated calls go on working."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from pathlib import Path

import trustme
from cryptography import x509

from tests.support.admin_api import PemIdentity, write_ca, write_identity
from tests.support.bookies import BookieFactory
from tests.support.rest import call

# New connections tried, 0.25 s apart, before the rotation counts as not picked up: several refresh periods of
# 1 s, far fewer than the 30 s the admin API waits when tlsCertFilesRefreshDurationSeconds is off.
POLLS = 40


def swap_to(live: Path, version: Path) -> None:
    """What the kubelet does to a mounted Secret: a new directory, then one atomic rename of a symlink."""
    link = live.with_name(live.name + ".new")
    link.symlink_to(version)
    os.replace(link, live)


def served_serial(address: str, port: int, context: ssl.SSLContext) -> int:
    with socket.create_connection((address, port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=address) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return int(x509.load_der_x509_certificate(der).serial_number)


def serial_of(identity: PemIdentity) -> int:
    return int(x509.load_pem_x509_certificate(identity.cert.read_bytes()).serial_number)


async def test_a_rotated_admin_certificate_reaches_new_connections(bookie_factory: BookieFactory,
                                                                   tmp_path: Path) -> None:
    ca = trustme.CA()
    bookie = bookie_factory(1, start=False)[0]
    first = write_identity(ca, tmp_path / "v1", "admin", bookie.address)
    second = write_identity(ca, tmp_path / "v2", "admin", bookie.address)
    live = tmp_path / "live"
    swap_to(live, tmp_path / "v1")
    bookie.overrides.update(httpServerTlsEnable=True, httpServerTlsCertificatePath=str(live / "admin.crt"),
                            httpServerTlsKeyPath=str(live / "admin.key"), tlsCertFilesRefreshDurationSeconds=1)
    bookie.start()
    assert bookie.proc is not None
    pid = bookie.proc.pid
    context = ssl.create_default_context(cafile=str(write_ca(ca, tmp_path / "ca.crt")))

    assert await asyncio.to_thread(served_serial, bookie.address, bookie.http_port, context) == serial_of(first)
    swap_to(live, tmp_path / "v2")
    seen = []
    for _ in range(POLLS):
        seen.append(await asyncio.to_thread(served_serial, bookie.address, bookie.http_port, context))
        if seen[-1] == serial_of(second):
            break
        await asyncio.sleep(0.25)
    assert seen[-1] == serial_of(second), f"still the first certificate after {len(seen)} new connections"

    assert bookie.proc.poll() is None and bookie.proc.pid == pid        # no restart
    answer = await call("PUT", bookie.http_url + "/api/v1/bookie/state/readonly", body={"readOnly": False},
                        ssl=context)
    assert answer.status == 200, answer
