"""The admin API's HTTPS certificate is rotated without a restart: after its files change (a Kubernetes Secret
update: a symlink swapped to a new directory), a new connection gets the new certificate within
``tlsCertFilesRefreshDurationSeconds``, the same process serves it, and authenticated calls go on working."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import trustme

from tests.support.admin_api import serial_of, served_serial, swap_to, wait_until_served, write_ca, write_identity
from tests.support.bookies import BookieFactory
from tests.support.rest import call


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
    await wait_until_served(bookie.address, bookie.http_port, context, second)

    assert bookie.proc.poll() is None and bookie.proc.pid == pid        # no restart
    answer = await call("PUT", bookie.http_url + "/api/v1/bookie/state/readonly", body={"readOnly": False},
                        ssl=context)
    assert answer.status == 200, answer
