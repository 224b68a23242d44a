"""Real Apache BookKeeper bookies (``org.apache.bookkeeper.server.Main`` from the Maven classpath).

Used by the client and compatibility tests (tests/support/java_bookies.py). Each bookie is a JVM in its own
process group with a generated ``bk_server.conf``, advertised as ``127.0.0.x:port`` like our own bookies, so
Python and Java bookies can share one cluster and one ensemble. ``stop()`` is graceful, ``kill()`` is a
crash (SIGKILL of the whole group); the data directory is kept so ``start()`` brings the same bookie back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie_fleet.local_bookies import free_port

LIB_ENV = "BOOKIE_FLEET_BK_LIB"
MAIN_CLASS = "org.apache.bookkeeper.server.Main"
JVM_OPTS = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
            "-Dio.netty.leakDetection.level=disabled")

_LOG4J = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1} - %m%n
rootLogger.level = {level}
rootLogger.appenderRef.console.ref = console
"""


def bk_lib_dir(lib_dir: str | Path | None = None) -> Path:
    lib = lib_dir or os.environ.get(LIB_ENV)
    if not lib or not Path(lib).is_dir():
        raise RuntimeError(f"${LIB_ENV} must name the directory of the BookKeeper jars (got {lib!r}); "
                           f"run ./scripts/bootstrap and source its env file")
    return Path(lib)


@dataclass
class JavaBookie:
    """One Apache BookKeeper bookie process."""

    address: str
    port: int
    data_dir: Path
    zk_connect: str
    ledgers_root: str
    overrides: dict[str, Any] = field(default_factory=dict)
    lib_dir: Path | None = None
    log_level: str = "info"
    proc: subprocess.Popen[bytes] | None = None

    @property
    def bookie_id(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def conf_path(self) -> Path:
        return self.data_dir / "bk_server.conf"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "bookie.log"

    def conf_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "bookiePort": self.port,
            "advertisedAddress": self.address,
            "allowLoopback": True,
            "metadataServiceUri": f"zk+hierarchical://{self.zk_connect.replace(',', ';')}{self.ledgers_root}",
            "journalDirectories": str(self.data_dir / "journal"),
            "ledgerDirectories": str(self.data_dir / "ledgers"),
            "zkTimeout": 10000,
            "httpServerEnabled": False,
            "autoRecoveryDaemonEnabled": False,
            # Tests kill processes, not machines: the page cache survives, fsync only costs time.
            "journalSyncData": False,
            "journalMaxGroupWaitMSec": 1,
            "dbStorage_writeCacheMaxSizeMb": 16,
            "dbStorage_readAheadCacheMaxSizeMb": 16,
            "dbStorage_rocksDB_blockCacheSize": 16 * 1024 * 1024,
            "diskUsageThreshold": 0.999,
            "diskUsageWarnThreshold": 0.998,
            "numAddWorkerThreads": 1,
            "numReadWorkerThreads": 2,
            "serverNumIOThreads": 2,
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
        (self.data_dir / "log4j2.properties").write_text(_LOG4J.replace("{level}", self.log_level))

    def command(self) -> list[str]:
        lib = bk_lib_dir(self.lib_dir)
        java = shutil.which("java") or "java"
        return [java, *JVM_OPTS, f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
                "-cp", f"{lib}/*", MAIN_CLASS, "-c", str(self.conf_path)]

    def start(self, wait: bool = True, timeout: float = 90.0) -> JavaBookie:
        if self.running:
            return self
        self.write_conf()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Until the bookie accepts connections and is registered under ``available/``."""
        from kazoo.client import KazooClient

        deadline = time.monotonic() + timeout
        zk = KazooClient(hosts=self.zk_connect, timeout=10)
        zk.start(timeout=timeout)
        try:
            path = f"{self.ledgers_root}/available/{self.bookie_id}"
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"Java bookie {self.bookie_id} exited with {self.proc.returncode}; "
                                       f"log:\n{self.tail_log()}")
                if zk.exists(path) is not None and _accepts(self.address, self.port):
                    return
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()
        raise TimeoutError(f"Java bookie {self.bookie_id} not ready after {timeout}s; log:\n{self.tail_log()}")

    def tail_log(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _signal(self, sig: int) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (BookKeeper's shutdown hook closes the bookie), SIGKILL after ``timeout``."""
        if self.proc is None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait()
        self._signal(signal.SIGKILL)  # anything left in the group
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.proc is None:
            return
        self._signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None


def _accepts(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def plan_java_bookies(count: int, base_dir: Path, zk_connect: str, ledgers_root: str, *, first_host: int = 51,
                      **overrides: Any) -> list[JavaBookie]:
    """``count`` Java bookies on 127.0.0.<first_host + i>, each with its own port and data directory.

    BookKeeper binds its port on every interface, so the ports differ even though the addresses do.
    """
    bookies = []
    used: set[int] = set()
    for i in range(count):
        address = f"127.0.0.{first_host + i}"
        port = free_port("0.0.0.0")
        while port in used:
            port = free_port("0.0.0.0")
        used.add(port)
        bookies.append(JavaBookie(address=address, port=port, data_dir=base_dir / f"java-bookie-{i}",
                                  zk_connect=zk_connect, ledgers_root=ledgers_root, overrides=dict(overrides)))
    return bookies


def start_all(bookies: list[JavaBookie], timeout: float = 120.0) -> None:
    """Start every bookie, then wait for all (the JVMs boot in parallel)."""
    for b in bookies:
        b.start(wait=False)
    for b in bookies:
        b.wait_ready(timeout)


def stop_all(bookies: list[JavaBookie]) -> None:
    for b in bookies:
        b.stop()
