"""With spec.tls.admin's keys (httpServerTls*), the inspector serves its API over HTTPS only: the explain endpoint
and the entry-log reads answer a client that verifies the certificate against the CA, a plain-HTTP request gets
no answer, and a rotated certificate (a Secret update: a symlink swapped to a new directory) reaches new
connections without a restart, as the bookie's admin API does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
import trustme
from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import KEPT, TOPICS, JavaDisk
from tests.support.admin_api import serial_of, served_serial, swap_to, wait_until_served, write_ca, write_identity
from tests.support.rest import call


async def test_the_inspector_answers_over_https_only_and_takes_a_rotated_certificate(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    ca = trustme.CA()
    first = write_identity(ca, tmp_path / "v1", "admin", "127.0.0.87")
    second = write_identity(ca, tmp_path / "v2", "admin", "127.0.0.87")
    live = tmp_path / "live"
    swap_to(live, tmp_path / "v1")
    disk = java_disk.copy(tmp_path / "ledgers")
    inspector = await asyncio.to_thread(
        inspectors, disk, ca_file=write_ca(ca, tmp_path / "ca.crt"), httpServerTlsEnable=True,
        httpServerTlsCertificatePath=str(live / "admin.crt"), httpServerTlsKeyPath=str(live / "admin.key"),
        tlsCertFilesRefreshDurationSeconds=1)
    context = inspector.ssl_context()
    assert context is not None and inspector.http_url.startswith("https://")

    explain = await call("GET", f"{inspector.http_url}/api/v1/bookie/entry_logs", ssl=context)
    assert explain.status == 200, explain
    assert TOPICS[KEPT] in explain.text      # the pinning topic, over the verified connection
    files = await call("GET", f"{inspector.http_url}/api/v1/bookie/entry_log_files", ssl=context)
    assert files.status == 200 and files.json()["entryLogs"], files

    plain = inspector.http_url.replace("https://", "http://")
    with pytest.raises(aiohttp.ClientError):
        await call("GET", f"{plain}/api/v1/bookie/entry_logs")

    pid = inspector.proc.pid
    assert await asyncio.to_thread(served_serial, inspector.address, inspector.http_port, context) == \
        serial_of(first)
    swap_to(live, tmp_path / "v2")
    await wait_until_served(inspector.address, inspector.http_port, context, second)
    assert inspector.proc.poll() is None and inspector.proc.pid == pid    # no restart
    again = await call("GET", f"{inspector.http_url}/api/v1/bookie/entry_logs", ssl=context)
    assert again.status == 200, again
