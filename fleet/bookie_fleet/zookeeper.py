"""A real ZooKeeper server (``ZooKeeperServerMain`` from the BookKeeper classpath) as a child process.

Used by the tests and by the playground. The JVM runs in its own process group so ``stop()`` takes down
everything it started. ``stop()``/``start()`` keep the port and the data directory, so a test can take
ZooKeeper away mid-operation and bring the same ensemble back; ``pause()``/``resume()`` freeze the server
(SIGSTOP/SIGCONT) to simulate a hung ZooKeeper whose connections stay open.

``tls=ZooKeeperTls(...)`` serves ZooKeeper's ``secureClientPort`` (Netty, PEM key store and trust store, client
certificates required, their subject the session's ``x509`` identity) and, unless ``also_plaintext``, no
plaintext port at all: a ZooKeeper reachable only over TLS.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from bookie_fleet.jvm_archives import archive_options
from bookie_fleet.processes import free_port, log_tail, signal_group, spawn, terminate, write_properties

LIB_ENV = "BOOKIE_FLEET_BK_LIB"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
_JVM_OPTS = ("-Xms32m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dzookeeper.admin.enableServer=false", "-Djava.net.preferIPv4Stack=true")


# ZooKeeper's *provided* dependencies that ZooKeeperServerMain needs at run time (metrics, snapshot
# compression). Maven does not copy provided dependencies into BookKeeper's classpath.
PROVIDED_JARS = (
    ("io/dropwizard/metrics/metrics-core", "metrics-core", "io.dropwizard.metrics:metrics-core:4.1.12.1"),
    ("org/xerial/snappy/snappy-java", "snappy-java", "org.xerial.snappy:snappy-java:1.1.10.5"),
)


def provided_classpath(lib_dir: Path) -> list[str]:
    """Jars of ``PROVIDED_JARS`` missing from ``lib_dir``, taken from the local Maven repository."""
    extra = []
    for group_path, artifact, coordinates in PROVIDED_JARS:
        if any(lib_dir.glob(f"{artifact}-*.jar")):
            continue
        repo = Path.home() / ".m2/repository" / group_path
        jars = sorted(repo.glob(f"*/{artifact}-*.jar"))
        if not jars:
            raise ZooKeeperError(f"{artifact} jar not found in {lib_dir} nor {repo}: run "
                                 f"`mvn dependency:get -Dartifact={coordinates} -Dtransitive=false`")
        extra.append(str(jars[-1]))
    return extra


@dataclass(frozen=True)
class ZooKeeperTls:
    """PEM files of a ZooKeeper serving TLS.

    ``key_store``: the server's private key (PKCS#8, as ZooKeeper's PEM reader wants it) and certificate chain
    in one file; ``trust_store``: the CA bundle client certificates must chain to; ``client_cert`` and
    ``client_key``: a client certificate of that CA, used for the readiness check.
    """

    key_store: Path
    trust_store: Path
    client_cert: Path
    client_key: Path
    also_plaintext: bool = False

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.trust_store))
        context.check_hostname = False  # the readiness check dials an address; the chain is still verified
        context.load_cert_chain(self.client_cert, self.client_key)
        return context


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0,
                     tls: ZooKeeperTls | None = None) -> str:
    """Send a ZooKeeper four-letter command and return the answer ('' if it cannot be asked)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            s = tls.client_context().wrap_socket(raw) if tls is not None else raw
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except (OSError, ssl.SSLError):
        return ""


class ZooKeeperError(RuntimeError):
    """The server did not start (the message carries the end of its log)."""


class _PortTaken(ZooKeeperError):
    """Another process bound the port between ``free_port`` and the JVM's bind."""


_PORT_ATTEMPTS = 3


class ZooKeeperServer:
    """``ZooKeeperServer(data_dir, port=0, host='127.0.0.1')``; ``port=0`` picks a free port once."""

    def __init__(self, data_dir: str | Path, port: int = 0, host: str = "127.0.0.1", *,
                 tick_time_ms: int = 500, force_sync: bool = False, lib_dir: str | Path | None = None,
                 java: str | None = None, tls: ZooKeeperTls | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.host = host
        self.tls = tls
        self._pick_ports = port == 0
        self.port = port or free_port(host)
        self.secure_port = free_port(host) if tls is not None else None
        self.tick_time_ms = tick_time_ms
        self.force_sync = force_sync
        lib = lib_dir or os.environ.get(LIB_ENV)
        if not lib or not Path(lib).is_dir():
            raise ZooKeeperError(f"${LIB_ENV} must name the directory of the ZooKeeper jars (got {lib!r})")
        self.lib_dir = Path(lib)
        self.java = java or shutil.which("java") or "java"
        self.proc: subprocess.Popen[bytes] | None = None
        self._paused = False
        self._log_start = 0

    @property
    def plaintext(self) -> bool:
        return self.tls is None or self.tls.also_plaintext

    @property
    def connect_string(self) -> str:
        """The plaintext port's, or the secure port's when that is the only one."""
        return f"{self.host}:{self.port}" if self.plaintext else self.secure_connect_string

    @property
    def secure_connect_string(self) -> str:
        if self.secure_port is None:
            raise ZooKeeperError("this ZooKeeper serves no TLS port")
        return f"{self.host}:{self.secure_port}"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "zoo.cfg"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "zookeeper.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def write_config(self) -> None:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        lines = {
            "tickTime": self.tick_time_ms,
            "initLimit": 10,
            "syncLimit": 5,
            "dataDir": self.data_dir / "data",
            "clientPort": self.port,
            "clientPortAddress": self.host,
            "maxClientCnxns": 0,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok,stat,srvr,mntr,cons,conf",
            "forceSync": "yes" if self.force_sync else "no",
            # Sessions of up to 20 ticks: the tests use short zkTimeouts to see expiry quickly.
            "minSessionTimeout": 2 * self.tick_time_ms,
            "maxSessionTimeout": 60 * self.tick_time_ms,
        }
        if self.tls is not None:
            lines.update(self._tls_config(self.tls))
            if not self.tls.also_plaintext:
                del lines["clientPort"], lines["clientPortAddress"]
        write_properties(self.config_path, lines)

    def _tls_config(self, tls: ZooKeeperTls) -> dict[str, object]:
        return {
            "secureClientPort": self.secure_port,
            "secureClientPortAddress": self.host,
            "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location": tls.key_store,
            "ssl.keyStore.type": "PEM",
            "ssl.trustStore.location": tls.trust_store,
            "ssl.trustStore.type": "PEM",
            "ssl.clientAuth": "need",
            # Client certificates are checked against the CA, not against the address a client comes from.
            "ssl.hostnameVerification": "false",
            "authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
        }

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Launch the JVM and wait until it serves requests.

        A port picked by ``free_port`` can be taken by another process before the JVM binds it; such a
        server is started again on fresh ports (a port the caller chose is never changed).
        """
        if self.running:
            return self
        for attempt in range(_PORT_ATTEMPTS):
            self._launch()
            try:
                self._wait_ready(timeout)
                return self
            except _PortTaken:
                if not self._pick_ports or attempt == _PORT_ATTEMPTS - 1:
                    raise
                self.port = free_port(self.host)
                self.secure_port = free_port(self.host) if self.tls is not None else None
        raise AssertionError("unreachable")

    def _launch(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.write_config()
        classpath = os.pathsep.join([f"{self.lib_dir}/*", *provided_classpath(self.lib_dir)])
        cmd = [self.java, *_JVM_OPTS, *archive_options(self.java, classpath, MAIN_CLASS), "-cp", classpath, MAIN_CLASS,
               str(self.config_path)]
        # The log is appended to across restarts: a bind failure is looked for in this launch's part only.
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.proc = spawn(cmd, self.log_path)
        self._paused = False

    def _wait_ready(self, timeout: float) -> None:
        """Until the server on our port answers ``srvr`` and reports our data directory.

        ``srvr`` alone is not enough: when another server holds the port, it answers in our place until
        our JVM gives up binding; the data directory in ``conf`` tells the two apart.
        """
        deadline = time.monotonic() + timeout
        port, tls = (self.port, None) if self.plaintext else (self.secure_port, self.tls)
        while time.monotonic() < deadline:
            if not self.running:
                log = self.log_tail()
                self.proc = None
                with open(self.log_path, "rb") as f:
                    f.seek(self._log_start)
                    this_launch = f.read().decode(errors="replace")
                if "Address already in use" in this_launch:
                    raise _PortTaken(f"port {port} on {self.host} was taken:\n{log}")
                raise ZooKeeperError(f"ZooKeeper exited:\n{log}")
            if port is not None and self._serves_our_data(port, tls):
                return
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperError(
            f"ZooKeeper not ready on {self.connect_string} after {timeout}s:\n{self.log_tail()}")

    def _serves_our_data(self, port: int, tls: ZooKeeperTls | None) -> bool:
        # ``ruok`` answers imok even when the server thread died; ``srvr`` only answers when serving.
        if not four_letter_word(self.host, port, "srvr", tls=tls).startswith("Zookeeper version"):
            return False
        conf = four_letter_word(self.host, port, "conf", tls=tls)
        return f"dataDir={self.data_dir / 'data'}{os.sep}" in conf

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_path, lines)

    def stop(self, timeout: float = 3.0) -> None:
        """Kill the whole process group and wait; the port and data directory are kept for ``start()``."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self._paused:
            signal_group(proc, signal.SIGCONT)  # a frozen JVM acts on no signal but SIGKILL
        terminate(proc, timeout)
        self._paused = False
        self._wait_port_free()

    def _wait_port_free(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as s:
                # As the JVM does: connections in TIME_WAIT must not count as "port in use".
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind((self.host, self.port if self.plaintext else self.secure_port or self.port))
                    return
                except OSError:
                    time.sleep(0.05)

    def restart(self, down_for: float = 0.0) -> None:
        """Stop, optionally stay down for ``down_for`` seconds, start again on the same port and data."""
        self.stop()
        if down_for > 0:
            time.sleep(down_for)
        self.start()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): clients stay connected but get no answers."""
        if self.proc is not None and not self._paused:
            os.killpg(self.proc.pid, signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        if self.proc is not None and self._paused:
            os.killpg(self.proc.pid, signal.SIGCONT)
            self._paused = False

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
