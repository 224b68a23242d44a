"""Inspector processes (``bookie inspect serve``) beside local bookies, Apache BookKeeper's usually: each reads its
bookie's ledger directory read-only and the same ZooKeeper, and serves the explain endpoint, entry-log metrics and
the entry-log files the storage audit reads (``bookie.inspector``)."""

from __future__ import annotations

import contextlib
import ssl
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie_fleet.processes import BookieProcess, TokenProtected, free_port, metadata_service_uri


@dataclass
class InspectorProcess(TokenProtected):
    """One inspector beside ``bookie`` (any ``BookieProcess``: it reads ``bookie.ledger_dir``)."""

    kind = "inspector"
    conf_name = "inspector.conf"
    ready_timeout = 60.0

    bookie: BookieProcess
    address: str
    http_port: int
    data_dir: Path
    zk_connect: str
    ledgers_root: str
    admin_token: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    ca_file: Path | None = None   # what its HTTPS certificate chains to, when overrides turn HTTPS on
    proc: Any = None

    @property
    def bookie_id(self) -> str:
        return self.bookie.bookie_id

    @property
    def https(self) -> bool:
        return str(self.overrides.get("httpServerTlsEnable", "")).lower() == "true"

    @property
    def http_url(self) -> str:
        return f"{'https' if self.https else 'http'}://{self.address}:{self.http_port}"

    def ssl_context(self) -> ssl.SSLContext | None:
        """A context that verifies its HTTPS certificate (None over HTTP)."""
        if not self.https:
            return None
        if self.ca_file is None:
            raise ValueError("an inspector serving HTTPS needs ca_file to be waited for and called")
        return ssl.create_default_context(cafile=str(self.ca_file))

    @property
    def log_path(self) -> Path:
        return self.data_dir / "inspector.log"

    def conf_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "bookieId": self.bookie.bookie_id,
            "metadataServiceUri": metadata_service_uri(self.zk_connect, self.ledgers_root),
            "ledgerDirectories": str(self.bookie.ledger_dir),
            "httpServerHost": self.address,
            "httpServerPort": self.http_port,
        }
        if self.admin_token is not None:
            values["httpServerAuthTokenFile"] = str(self.admin_token_file)
        values.update(self.overrides)
        return values

    def command(self) -> list[str]:
        return [sys.executable, "-m", "bookie.cli", "inspect", "serve", "--conf", str(self.conf_path),
                "--termination-log", ""]

    def wait_ready(self, timeout: float | None = None) -> None:
        """Until it says it is ready: its bookie's disk and ZooKeeper both read once."""
        self._wait_until(lambda: self._answers("/api/v1/bookie/is_ready"), timeout, poll=0.1)

    def wait_serving(self, timeout: float | None = None) -> None:
        """Until it answers its heartbeat, ready or not (``/api/v1/bookie/is_ready`` then says what is missing)."""
        self._wait_until(lambda: self._answers("/heartbeat"), timeout, poll=0.1)

    def _answers(self, path: str) -> bool:
        with (contextlib.suppress(OSError),
              urllib.request.urlopen(f"{self.http_url}{path}", timeout=1, context=self.ssl_context()) as r):
            return r.status == 200
        return False


def plan_inspectors(bookies: list[BookieProcess], base_dir: Path, zk_connect: str, ledgers_root: str, *,
                    first_host: int = 91, admin_token: str | None = None, **overrides: Any) -> list[InspectorProcess]:
    """One inspector per bookie, on 127.0.0.<first_host + i>, each with its own configuration directory."""
    out = []
    for i, b in enumerate(bookies):
        address = f"127.0.0.{first_host + i}"
        out.append(InspectorProcess(bookie=b, address=address, http_port=free_port(address, 8080),
                                    data_dir=base_dir / f"inspector-{i}", zk_connect=zk_connect,
                                    ledgers_root=ledgers_root, admin_token=admin_token, overrides=dict(overrides)))
    return out
