"""Real Apache BookKeeper bookies (``org.apache.bookkeeper.server.Main`` from the Maven classpath).

Used by the client and compatibility tests (tests/support/java_bookies.py). Each bookie is a JVM in its own
process group with a generated ``bk_server.conf``, advertised as ``127.0.0.x:port`` like our own bookies, so
Python and Java bookies can share one cluster and one ensemble. ``stop()`` is graceful, ``kill()`` is a
crash (SIGKILL of the whole group); the data directory is kept so ``start()`` brings the same bookie back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from bookie_fleet import processes
from bookie_fleet.jvm_archives import archive_options
from bookie_fleet.processes import (
    BookieProcess,
    accepts,
    answers_requests,
    console_log4j2,
    free_port,
    java_tmpdir,
    metadata_service_uri,
    stop_all,
)

__all__ = ["PRODUCTION_JVM_OPTS", "TEST_JVM_OPTS", "JavaBookie", "bk_lib_dir", "plan_java_bookies", "start_all",
           "stop_all"]

LIB_ENV = "BOOKIE_FLEET_BK_LIB"
MAIN_CLASS = "org.apache.bookkeeper.server.Main"
# The test suite's JVM: small heap, serial GC and the C1 compiler only, so that a bookie starts in seconds.
TEST_JVM_OPTS = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
                 "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
                 "-Dio.netty.leakDetection.level=disabled")
# What Apache BookKeeper 4.17's bin/bookkeeper gives a bookie on Java 9 and later (bin/common.sh with an empty
# conf/bkenv.sh): 1 GB heap, 2 GB of direct memory, G1 with a 10 ms pause goal, full tiered compilation, and
# the --add-opens that let Netty and the journal use direct buffers and posix_fadvise. GC logging left out.
PRODUCTION_JVM_OPTS = ("-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=2g",
                       "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=10", "-XX:+ParallelRefProcEnabled",
                       "-XX:+DisableExplicitGC",
                       "-Dio.netty.leakDetectionLevel=disabled", "-Dio.netty.tryReflectionSetAccessible=true",
                       "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                       "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
                       "-Djava.net.preferIPv4Stack=true",
                       "--add-opens", "java.base/java.io=ALL-UNNAMED",
                       "--add-opens", "java.base/java.util.zip=ALL-UNNAMED")
# bk_server.conf values that only suit tests (small caches and thread pools sized for many bookies on two
# cores, no fsync: tests kill processes, not machines). A production bookie keeps BookKeeper's defaults.
TEST_TUNING: dict[str, Any] = {
    "journalSyncData": False,
    "dbStorage_writeCacheMaxSizeMb": 16,
    "dbStorage_readAheadCacheMaxSizeMb": 16,
    "dbStorage_rocksDB_blockCacheSize": 16 * 1024 * 1024,
    "diskUsageThreshold": 0.999,
    "diskUsageWarnThreshold": 0.998,
    "numAddWorkerThreads": 1,
    "numReadWorkerThreads": 2,
    "serverNumIOThreads": 2,
}


def bk_lib_dir(lib_dir: str | Path | None = None) -> Path:
    lib = lib_dir or os.environ.get(LIB_ENV)
    if not lib or not Path(lib).is_dir():
        raise RuntimeError(f"${LIB_ENV} must name the directory of the BookKeeper jars (got {lib!r}); "
                           f"run ./scripts/bootstrap and source its env file")
    return Path(lib)


@dataclass
class JavaBookie(BookieProcess):
    """One Apache BookKeeper bookie process."""

    kind = "Java bookie"
    conf_name = "bk_server.conf"
    ready_timeout = 90.0

    address: str
    port: int
    data_dir: Path
    zk_connect: str
    ledgers_root: str
    overrides: dict[str, Any] = field(default_factory=dict)
    lib_dir: Path | None = None
    log_level: str = "info"
    http_port: int | None = None  # BookKeeper's admin REST API (Vert.x), off unless a port is given
    production: bool = False  # BookKeeper's production JVM and defaults instead of the tests' fast start
    proc: subprocess.Popen[bytes] | None = None
    started_ms: int = 0  # when start() last ran, in ZooKeeper's clock (this machine's), ms

    @property
    def bookie_id(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def http_url(self) -> str:
        if self.http_port is None:
            raise RuntimeError(f"Java bookie {self.bookie_id} was planned without an HTTP port")
        return f"http://{self.address}:{self.http_port}"

    def conf_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "bookiePort": self.port,
            "advertisedAddress": self.address,
            "allowLoopback": True,
            "metadataServiceUri": metadata_service_uri(self.zk_connect, self.ledgers_root),
            "journalDirectories": str(self.journal_dir),
            "ledgerDirectories": str(self.ledger_dir),
            "zkTimeout": 10000,
            "httpServerEnabled": self.http_port is not None,
            "autoRecoveryDaemonEnabled": False,
            "journalMaxGroupWaitMSec": 1,
        }
        if not self.production:
            values.update(TEST_TUNING)
        if self.http_port is not None:
            values["httpServerPort"] = self.http_port
            # No default in 4.17: without a class the bookie refuses to start with the HTTP server enabled.
            values["httpServerClass"] = "org.apache.bookkeeper.http.vertx.VertxHttpServer"
        values.update(self.overrides)
        return values

    def write_conf(self) -> None:
        super().write_conf()
        (self.data_dir / "log4j2.properties").write_text(console_log4j2(self.log_level))

    def command(self) -> list[str]:
        lib = bk_lib_dir(self.lib_dir)
        java = shutil.which("java") or "java"
        jvm = PRODUCTION_JVM_OPTS if self.production else (*TEST_JVM_OPTS,
                                                             *archive_options(java, f"{lib}/*", MAIN_CLASS))
        return [java, *jvm, java_tmpdir(self.data_dir / "tmp"),
                f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
                "-cp", f"{lib}/*", MAIN_CLASS, "-c", str(self.conf_path)]

    def start(self, wait: bool = True, timeout: float | None = None) -> Self:
        if not self.running:
            self.started_ms = int(time.time() * 1000)
        return super().start(wait, timeout)

    def wait_ready(self, timeout: float | None = None) -> None:
        """Until the bookie answers a request on a new connection (and its admin REST API accepts connections,
        when it has one) and has registered itself under ``available/``: it listens, and registers, before it
        serves, and closes the connections it accepts until then (``answers_requests``).

        Its own registration, made since ``start()``: a bookie killed on this address leaves its ephemeral
        znode until its session expires, and the new process takes requests only once it has replaced it.
        """
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=self.zk_connect, timeout=10)
        zk.start(timeout=self.ready_timeout if timeout is None else timeout)
        try:
            path = f"{self.ledgers_root}/available/{self.bookie_id}"

            def registered() -> bool:
                stat = zk.exists(path)
                return stat is not None and stat.ctime >= self.started_ms

            def serving() -> bool:  # its admin REST API starts after the registration, when it has one
                return answers_requests(self.address, self.port) and (
                    self.http_port is None or accepts(self.address, self.http_port))

            self._wait_until(lambda: registered() and serving(), timeout, poll=0.2)
        finally:
            zk.stop()
            zk.close()


def plan_java_bookies(count: int, base_dir: Path, zk_connect: str, ledgers_root: str, *, first_host: int = 51,
                      http: bool = False, production: bool = False, lib_dir: Path | None = None,
                      **overrides: Any) -> list[JavaBookie]:
    """``count`` Java bookies on 127.0.0.<first_host + i>, each with its own port and data directory (and, with
    ``http``, its own admin REST port); ``production``: BookKeeper's own JVM options and defaults; ``lib_dir``:
    another version's jars than ``$BOOKIE_FLEET_BK_LIB``'s.

    BookKeeper binds its ports on every interface, so the ports differ even though the addresses do.
    """
    bookies = []
    used: set[int] = set()

    def fresh_port() -> int:
        port = free_port("0.0.0.0")
        while port in used:
            port = free_port("0.0.0.0")
        used.add(port)
        return port

    for i in range(count):
        address = f"127.0.0.{first_host + i}"
        port = fresh_port()
        bookies.append(JavaBookie(address=address, port=port, data_dir=base_dir / f"java-bookie-{i}",
                                  zk_connect=zk_connect, ledgers_root=ledgers_root, overrides=dict(overrides),
                                  http_port=fresh_port() if http else None, production=production,
                                  lib_dir=lib_dir))
    return bookies


def start_all(bookies: list[JavaBookie], timeout: float = 120.0) -> None:
    """Start every bookie, then wait for all; JVMs booting together on a few cores need more than one alone."""
    processes.start_all(bookies, timeout)
