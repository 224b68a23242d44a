"""Run real bookie processes on this machine, each on its own loopback address.

Used by the playground and by the tests (tests/support/bookies.py). Each bookie is a separate
``bookie serve`` process in its own process group, listening on 127.0.0.x so that bookie ids look like
a fleet's (``127.0.0.11:3181``) and ports never collide between bookies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def free_port(host: str = "127.0.0.1", preferred: int | None = None) -> int:
    """A port free on ``host``: ``preferred`` when it is, else one the kernel picks."""
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, candidate))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError(f"no free port on {host}")


@dataclass
class LocalBookie:
    """One ``bookie serve`` process and its configuration."""

    address: str
    port: int
    http_port: int
    data_dir: Path
    zk_connect: str
    ledgers_root: str
    overrides: dict[str, Any] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def bookie_id(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def http_url(self) -> str:
        return f"http://{self.address}:{self.http_port}"

    @property
    def conf_path(self) -> Path:
        return self.data_dir / "bookie.conf"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "bookie.log"

    @property
    def journal_dir(self) -> Path:
        return self.data_dir / "journal"

    @property
    def ledger_dir(self) -> Path:
        return self.data_dir / "ledgers"

    def conf_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "bookiePort": self.port,
            "advertisedAddress": self.address,
            "listeningAddress": self.address,
            "metadataServiceUri": f"zk+hierarchical://{self.zk_connect.replace(',', ';')}{self.ledgers_root}",
            "journalDirectories": str(self.journal_dir),
            "ledgerDirectories": str(self.ledger_dir),
            "httpServerEnabled": True,
            "httpServerHost": self.address,
            "httpServerPort": self.http_port,
        }
        values.update(self.overrides)
        return values

    def write_conf(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lines = []
        for key, value in self.conf_values().items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            lines.append(f"{key}={text}")
        self.conf_path.write_text("\n".join(lines) + "\n")

    def start(self, wait: bool = True, timeout: float = 60) -> None:
        self.write_conf()
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bookie.cli", "serve", "--conf", str(self.conf_path)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        finally:
            log.close()
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"bookie {self.bookie_id} exited with {self.proc.returncode}; "
                                   f"log:\n{self.tail_log()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.http_url}/api/v1/bookie/is_ready", timeout=1) as r:
                    if r.status == 200:
                        return
            time.sleep(0.1)
        raise TimeoutError(f"bookie {self.bookie_id} not ready after {timeout}s; log:\n{self.tail_log()}")

    def tail_log(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    def _signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20) -> None:
        """Graceful stop (SIGTERM), then SIGKILL if it does not exit in time."""
        if self.proc is None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.proc is None:
            return
        self._signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def restart(self, timeout: float = 60) -> None:
        self.stop()
        self.start(wait=True, timeout=timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def plan_bookies(count: int, base_dir: Path, zk_connect: str, ledgers_root: str, *, first_host: int = 11,
                 port: int = 3181, http_port: int = 8080, **overrides: Any) -> list[LocalBookie]:
    """``count`` bookies on 127.0.0.<first_host + i>, each with its own data directory."""
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
        ))
    return bookies


def stop_all(bookies: list[LocalBookie]) -> None:
    for b in bookies:
        b.stop()
