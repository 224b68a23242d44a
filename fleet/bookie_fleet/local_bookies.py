"""Run real bookie processes on this machine, each on its own loopback address.

Used by the playground and by the tests (tests/support/bookies.py). Each bookie is a separate
``bookie serve`` process in its own process group, listening on 127.0.0.x so that bookie ids look like
a fleet's (``127.0.0.11:3181``) and ports never collide between bookies.

``admin_token``: the bearer token of the bookie's admin API (written to a 0600 file in its data directory,
named by ``httpServerAuthTokenFile``); without one, the bookie refuses every mutating admin call, as any
bookie without a configured credential does. ``auth_headers()`` is what a caller sends.
"""

from __future__ import annotations

import contextlib
import ssl
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localkube.procs import ChildProcess

from bookie_fleet.processes import TokenProtected, free_port, metadata_service_uri, start_all, stop_all

__all__ = ["LocalBookie", "free_port", "plan_bookies", "start_all", "stop_all"]


@dataclass
class LocalBookie(TokenProtected):
    """One ``bookie serve`` process and its configuration."""

    conf_name = "bookie.conf"
    ready_timeout = 60.0

    address: str
    port: int
    http_port: int
    data_dir: Path
    zk_connect: str
    ledgers_root: str
    overrides: dict[str, Any] = field(default_factory=dict)
    admin_token: str | None = None
    proc: ChildProcess | None = None

    @property
    def bookie_id(self) -> str:
        """``bookieId`` when configured (a name clients find through the published endpoints), else
        ``address:port``."""
        return str(self.overrides.get("bookieId") or f"{self.address}:{self.port}")

    @property
    def http_url(self) -> str:
        scheme = "https" if self.overrides.get("httpServerTlsEnable") else "http"
        return f"{scheme}://{self.address}:{self.http_port}"

    def conf_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "bookiePort": self.port,
            "advertisedAddress": self.address,
            "listeningAddress": self.address,
            "metadataServiceUri": metadata_service_uri(self.zk_connect, self.ledgers_root),
            "journalDirectories": str(self.journal_dir),
            "ledgerDirectories": str(self.ledger_dir),
            "httpServerEnabled": True,
            "httpServerHost": self.address,
            "httpServerPort": self.http_port,
        }
        if self.admin_token is not None:
            values["httpServerAuthTokenFile"] = str(self.admin_token_file)
        values.update(self.overrides)
        return values

    def command(self) -> list[str]:
        return [sys.executable, "-m", "bookie.cli", "serve", "--conf", str(self.conf_path)]

    def wait_ready(self, timeout: float | None = None) -> None:
        """Until its REST API says the bookie is ready."""
        self._wait_until(self._says_ready, timeout, poll=0.1)

    def _says_ready(self) -> bool:
        context = None
        if self.http_url.startswith("https:"):  # as the kubelet's HTTPS probes: the certificate is not checked
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        with (contextlib.suppress(OSError),
              urllib.request.urlopen(f"{self.http_url}/api/v1/bookie/is_ready", timeout=1, context=context) as r):
            return r.status == 200
        return False


def plan_bookies(count: int, base_dir: Path, zk_connect: str, ledgers_root: str, *, first_host: int = 11,
                 port: int = 3181, http_port: int = 8080, admin_token: str | None = None,
                 **overrides: Any) -> list[LocalBookie]:
    """``count`` bookies on 127.0.0.<first_host + i>, each with its own data directory (and ``admin_token``
    as the credential of its admin API)."""
    bookies = []
    for i in range(count):
        address = f"127.0.0.{first_host + i}"
        bookies.append(LocalBookie(
            address=address,
            port=free_port(address, port),
            http_port=free_port(address, http_port),
            data_dir=base_dir / f"bookie-{i}",
            zk_connect=zk_connect,
            ledgers_root=ledgers_root,
            overrides=dict(overrides),
            admin_token=admin_token,
        ))
    return bookies
