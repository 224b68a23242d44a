"""A real Apache Pulsar broker (``PulsarBrokerStarter`` from Maven Central's jars) on a given BookKeeper cluster,
and Pulsar's own Java client driven through ``hack/pulsar/PulsarHarness.java``: the Pulsar tests' (tests/pulsar)
and the playground's workload.

The broker's metadata lives under its own ZooKeeper chroot; its ledgers go to the bookies' existing
BookKeeper metadata (``PulsarClusterMetadataSetup --existing-bk-metadata-service-uri``). With ``bookie_tls``
its BookKeeper client speaks TLS to the bookies and presents a client certificate (``BookieClientTLS``). The
JVM runs in its own process group and ``stop()`` takes down everything it started.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie_fleet.certificates import TLS_CONTEXT_FACTORY, Issued
from bookie_fleet.jvm_archives import archive_options
from bookie_fleet.processes import (
    accepts,
    busy_threads,
    console_log4j2,
    free_port,
    java_thread_dump,
    java_tmpdir,
    log_tail,
    spawn,
    terminate,
    write_properties,
)

CLUSTER = "bookie-fleet"
# The broker's threads that move an entry from a producer to the bookies and back.
STALL_THREADS = ("BookKeeperClientWorker", "bookkeeper-ml", "metadata-store", "pulsar-io", "ForkJoinPool",
                 "main-EventThread", "pulsar-ordered")
# Small heap, no C2 and the serial collector: the broker starts in well under a minute on two shared cores.
JVM_OPTS = ("-Xms64m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true", "-Dio.netty.tryReflectionSetAccessible=true",
            "-Dio.netty.leakDetection.level=disabled",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.net=ALL-UNNAMED",
            "--add-opens", "java.management/sun.management=ALL-UNNAMED",
            "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED")
CLIENT_JVM_OPTS = ("-Xms32m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-Djava.net.preferIPv4Stack=true", "-Dio.netty.tryReflectionSetAccessible=true",
                   "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                   "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED")


@dataclass(frozen=True)
class PulsarClasspath:
    """One Pulsar line the bootstrap assembled: its jars (``$<prefix>_LIB``) and the client harness compiled
    against them, as a jar (``$<prefix>_HARNESS_JAR``)."""

    env_prefix: str
    part: str  # the bootstrap's part that assembles it (scripts/bootstrap.d/<part>.sh)

    @property
    def lib(self) -> Path:
        return self._assembled("LIB", "a directory", Path.is_dir)

    @property
    def harness_jar(self) -> Path:
        return self._assembled("HARNESS_JAR", "the harness jar", Path.is_file)

    def _assembled(self, suffix: str, what: str, exists: Callable[[Path], bool]) -> Path:
        """The path ``$<prefix>_<suffix>`` names, refused with the part that assembles it when it is not there."""
        name = f"{self.env_prefix}_{suffix}"
        value = os.environ.get(name)
        if not value or not exists(Path(value)):
            raise RuntimeError(f"${name} must name {what} built by scripts/bootstrap.d/{self.part}.sh "
                               f"(BOOKIE_FLEET_PARTS={self.part} ./scripts/bootstrap runs it alone; got {value!r}); "
                               f"run ./scripts/bootstrap and source its env file")
        return Path(value)

    def harness_command(self, *args: str, log_config: Path, tmp: Path) -> list[str]:
        """A ``PulsarHarness`` JVM (the test suite's maps the classes an earlier one archived)."""
        classpath = f"{self.harness_jar}:{self.lib}/*"
        return [java(), *CLIENT_JVM_OPTS, *archive_options(java(), classpath, "PulsarHarness"), java_tmpdir(tmp),
                f"-Dlog4j2.configurationFile={log_config}", "-cp", classpath, "PulsarHarness", *args]

    @property
    def version(self) -> str:
        """The broker's version, from its jar's name (pulsar-broker-<version>.jar)."""
        jars = sorted(self.lib.glob("pulsar-broker-[0-9]*.jar"))
        if len(jars) != 1:
            raise RuntimeError(f"expected one pulsar-broker jar in {self.lib}, found {[j.name for j in jars]}")
        return jars[0].name.removeprefix("pulsar-broker-").removesuffix(".jar")


# The newest line (hack/pulsar/pom.xml as written): every Pulsar test and the playground run it.
NEWEST = PulsarClasspath("BOOKIE_FLEET_PULSAR", "pulsar")
# The 4.0 LTS line: its compatibility test only (tests/pulsar/test_pulsar_lts_broker.py).
LTS = PulsarClasspath("BOOKIE_FLEET_PULSAR_LTS", "pulsar-lts")
# The same line with Pulsar's load tools, pulsar-testclient: the Pulsar benchmark only (bench/pulsar_e2e_bench.py).
LOAD_TOOLS = PulsarClasspath("BOOKIE_FLEET_PULSAR_PERF", "pulsar-lts")


def java() -> str:
    return shutil.which("java") or "java"


def broker_conf(zk_connect: str, chroot: str, bk_uri: str, broker_port: int, web_port: int) -> dict[str, Any]:
    """Pulsar's defaults where they matter to bookies (v2 wire protocol and 2/2/2 ensembles written out; the
    BookKeeper client's timeouts left alone), and small ledgers and fast trimming so that a short test sees
    ledgers roll and go."""
    store = f"zk:{zk_connect}{chroot}"
    return {
        "clusterName": CLUSTER, "metadataStoreUrl": store, "configurationMetadataStoreUrl": store,
        "bookkeeperMetadataServiceUri": bk_uri,
        "bindAddress": "127.0.0.1", "advertisedAddress": "127.0.0.1",
        "brokerServicePort": broker_port, "webServicePort": web_port,
        # Pulsar's defaults, written out because they are what the bookies are tested against.
        "bookkeeperUseV2WireProtocol": True,
        "managedLedgerDefaultEnsembleSize": 2, "managedLedgerDefaultWriteQuorum": 2,
        "managedLedgerDefaultAckQuorum": 2,
        # Roll ledgers after 20 entries (batches), at once rather than after the default 10 minutes.
        "managedLedgerMaxEntriesPerLedger": 20, "managedLedgerMinLedgerRolloverTimeMinutes": 0,
        "retentionCheckIntervalInSeconds": 2,
        # The test decides when a topic goes away; an idle topic deleted after a minute would race it.
        "brokerDeleteInactiveTopicsEnabled": False,
        "defaultNumberOfNamespaceBundles": 1,
        "managedLedgerCacheSizeMB": 16, "functionsWorkerEnabled": False, "webSocketServiceEnabled": False,
        "numIOThreads": 2, "numHttpServerThreads": 4, "numExecutorThreadPoolSize": 2,
        "bookkeeperNumberOfChannelsPerBookie": 2,
    }


PEM_BEGIN = b"-----BEGIN "


@dataclass(frozen=True)
class BookieClientTLS:
    """TLS from the broker's BookKeeper client to the bookies, with a client certificate: Pulsar's
    ``bookkeeperTLS*`` keys of broker.conf, which it copies into its BookKeeper ``ClientConfiguration``.

    Pulsar reads them only with ``bookkeeperTLSClientAuthentication=true``: that key is its switch for TLS to
    the bookies, so TLS without a client certificate cannot be configured this way and a certificate and its
    key are required. Files are PEM (what our bookies and BookKeeper's ``TLSContextFactory`` both read)."""

    certificate: Path  # bookkeeperTLSCertificateFilePath: the broker's certificate (chain)
    key: Path  # bookkeeperTLSKeyFilePath: its private key, PKCS#8
    trust_certs: Path  # bookkeeperTLSTrustCertsFilePath: the CAs the bookies' certificates chain to
    key_password: Path | None = None  # bookkeeperTLSKeyStorePasswordPath: a file with the key's password
    refresh_seconds: int = 300  # bookkeeperTlsCertFilesRefreshDurationSeconds (Pulsar's default)

    def __post_init__(self) -> None:
        if self.refresh_seconds < 0:
            raise ValueError(f"bookkeeperTlsCertFilesRefreshDurationSeconds must be >= 0 "
                             f"(got {self.refresh_seconds})")

    @classmethod
    def of(cls, issued: Issued, **extra: Any) -> BookieClientTLS:
        """The broker's certificate, its key and the CA bundle that issued it (the bookies' CA too)."""
        return cls(certificate=issued.certificate, key=issued.key, trust_certs=issued.ca, **extra)

    def files(self) -> dict[str, Path]:
        files = {"bookkeeperTLSCertificateFilePath": self.certificate, "bookkeeperTLSKeyFilePath": self.key,
                 "bookkeeperTLSTrustCertsFilePath": self.trust_certs}
        if self.key_password is not None:
            files["bookkeeperTLSKeyStorePasswordPath"] = self.key_password
        return files

    def check(self) -> None:
        """Every file exists and reads, and the PEM ones hold PEM: the broker itself would only fail at its
        first connection to a bookie, with a handshake error that does not name the file."""
        for key, path in self.files().items():
            try:
                head = path.read_bytes()[:4096]
            except FileNotFoundError:
                raise ValueError(f"{key}: {path} does not exist") from None
            except OSError as exc:
                raise ValueError(f"{key}: {path} cannot be read ({exc.strerror or exc})") from None
            if key != "bookkeeperTLSKeyStorePasswordPath" and PEM_BEGIN not in head:
                raise ValueError(f"{key}: {path} is not a PEM file (no '-----BEGIN' line)")

    def broker_conf(self) -> dict[str, Any]:
        """The broker.conf keys, after ``check()``."""
        self.check()
        return {"bookkeeperTLSClientAuthentication": True,
                "bookkeeperTLSProviderFactoryClass": TLS_CONTEXT_FACTORY,
                "bookkeeperTLSKeyFileType": "PEM", "bookkeeperTLSTrustCertTypes": "PEM",
                "bookkeeperTlsCertFilesRefreshDurationSeconds": self.refresh_seconds,
                **{key: str(path) for key, path in self.files().items()}}


@dataclass
class PulsarBroker:
    data_dir: Path
    zk_connect: str
    bk_ledgers_root: str
    chroot: str
    broker_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    log_level: str = "info"
    settings: dict[str, Any] = field(default_factory=dict)  # broker.conf keys over broker_conf()'s
    classpath: PulsarClasspath = NEWEST
    jvm_opts: tuple[str, ...] = JVM_OPTS  # the broker's JVM (a benchmark runs it at Pulsar's production settings)
    bookie_tls: BookieClientTLS | None = None  # TLS with a client certificate to the bookies
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        mixed = sorted(k for k in self.settings if k.lower().startswith("bookkeepertls"))
        if self.bookie_tls is not None and mixed:
            raise ValueError(f"bookie_tls sets the broker's TLS to the bookies; settings must not set {mixed} too")

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def bk_uri(self) -> str:
        return f"zk+hierarchical://{self.zk_connect.replace(',', ';')}{self.bk_ledgers_root}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "broker.log"

    def _java(self, main: str, *args: str, opts: tuple[str, ...] = JVM_OPTS) -> list[str]:
        lib = self.classpath.lib
        if opts == JVM_OPTS:  # the test suite's JVM, not a benchmark's production one
            opts = (*opts, *archive_options(java(), f"{lib}/*", main))
        return [java(), *opts, java_tmpdir(self.data_dir / "tmp"),
                f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}", "-cp", f"{lib}/*", main, *args]

    def setup_metadata(self, timeout: float = 180) -> None:
        """Pulsar's cluster metadata (cluster, tenant public, namespace public/default) on the existing bookies."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "log4j2.properties").write_text(console_log4j2(self.log_level))
        store = f"zk:{self.zk_connect}{self.chroot}"
        cmd = self._java("org.apache.pulsar.PulsarClusterMetadataSetup", "--cluster", CLUSTER,
                         "--metadata-store", store, "--configuration-metadata-store", store,
                         "--existing-bk-metadata-service-uri", self.bk_uri,
                         "--web-service-url", self.web_url, "--broker-service-url", self.service_url,
                         "--default-namespace-bundle-number", "1")
        log = self.data_dir / "metadata-setup.log"
        with log.open("wb") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"PulsarClusterMetadataSetup failed ({done.returncode}):\n{log_tail(log, 40)}")

    def start(self, timeout: float = 240) -> PulsarBroker:
        conf = self.data_dir / "broker.conf"
        tls = self.bookie_tls.broker_conf() if self.bookie_tls is not None else {}
        write_properties(conf, {**broker_conf(self.zk_connect, self.chroot, self.bk_uri, self.broker_port,
                                              self.web_port), **tls, **self.settings})
        self.proc = spawn(self._java("org.apache.pulsar.PulsarBrokerStarter", "--broker-conf", str(conf),
                                     opts=self.jvm_opts), self.log_path)
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"Pulsar broker exited ({self.proc.returncode}):\n{log_tail(self.log_path, 60)}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"Pulsar broker not ready in {timeout} s:\n{log_tail(self.log_path, 60)}")
            time.sleep(0.5)
        return self

    def _ready(self) -> bool:
        if not accepts("127.0.0.1", self.broker_port):
            return False
        try:
            with urllib.request.urlopen(f"{self.web_url}/admin/v2/brokers/ready", timeout=5) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def stop(self, timeout: float = 20) -> None:
        if self.proc is not None:
            terminate(self.proc, timeout)
            self.proc = None

    def admin(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 204),
              timeout: float = 60) -> Any:
        """Pulsar's admin REST API (what ``pulsar-admin`` calls)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.web_url}/admin/v2/{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:
                text = r.read().decode()
                status = r.status
        except urllib.error.HTTPError as exc:
            text, status = exc.read().decode(errors="replace"), exc.code
        if status not in ok:
            raise AssertionError(f"{method} /admin/v2/{path}: HTTP {status} {text}")
        return json.loads(text) if text.strip() else None

    @property
    def client_log_config(self) -> Path:
        """The log4j2 configuration of the Pulsar clients run beside this broker: their log to standard error,
        since their standard output is their answer (``PulsarHarness``)."""
        path = self.data_dir / "client-log4j2.properties"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(console_log4j2(self.log_level, target="SYSTEM_ERR"))
        return path

    def stall_report(self, topic: str) -> str:
        """What the broker says of a topic that stopped acknowledging, in a few lines: its managed ledger's state
        and pending adds, and where the broker's BookKeeper, managed-ledger and metadata threads are (the whole
        thread dump is kept beside the broker's log)."""
        lines = []
        try:
            stats = self.admin("GET", f"persistent/{topic}/internalStats", timeout=15)
            last = stats["ledgers"][-1] if stats.get("ledgers") else {}
            lines.append(f"managed ledger: state {stats.get('state')}, {stats.get('pendingAddEntriesCount')} adds "
                         f"pending, last confirmed {stats.get('lastConfirmedEntry')}, current ledger "
                         f"{last.get('ledgerId')} with {stats.get('currentLedgerEntries')} entries")
        except (AssertionError, OSError, ValueError, KeyError) as exc:
            lines.append(f"managed ledger: no stats ({exc})")
        if self.proc is not None and self.proc.poll() is None:
            dump = java_thread_dump(self.proc.pid)
            kept = self.data_dir / f"threads-{time.strftime('%H%M%S')}.txt"
            kept.write_text(dump)
            lines.append(f"broker threads (all in {kept}):")
            lines += busy_threads(dump, STALL_THREADS)
        return "\n".join(lines)

    def ledgers_of(self, topic: str) -> list[int]:
        """The ledger ids of a persistent topic ``tenant/namespace/name``, from its managed ledger's stats."""
        stats = self.admin("GET", f"persistent/{topic}/internalStats")
        return [int(entry["ledgerId"]) for entry in stats["ledgers"]]


@dataclass
class Acked:
    key: str
    sha256: str


class Producer:
    """``PulsarHarness produce`` as a child process: every message Pulsar acknowledged, by sequence number."""

    def __init__(self, broker: PulsarBroker, topic: str, count: int, *, keys: int = 8, max_size: int = 2048,
                 rate: float = 0) -> None:
        self.topic = topic
        self.acked: dict[int, Acked] = {}
        self.failed: dict[int, str] = {}
        self.done = threading.Event()
        log = broker.data_dir / f"producer-{topic.replace('/', '_')}-{time.monotonic_ns()}.log"
        self._err = log.open("wb")
        cmd = broker.classpath.harness_command(
            "produce", broker.service_url, f"persistent://{topic}", str(count), str(keys), str(max_size), str(rate),
            log_config=broker.client_log_config, tmp=broker.data_dir / "tmp")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     start_new_session=True)
        self._log = log
        self._broker = broker
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            parts = raw.decode().split(" ", 3)
            if parts[0] == "ACK":
                self.acked[int(parts[1])] = Acked(parts[2], parts[3].strip())
            elif parts[0] == "FAIL":
                self.failed[int(parts[1])] = parts[2].strip()
            elif parts[0].strip() == "DONE":
                self.done.set()

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None and not self.done.is_set():
                # Its last lines (DONE among them) may still be in the pipe, not yet read: the exit is seen
                # first on a loaded machine. Judge once the reader has read to the end.
                self._reader.join(timeout)
                if condition():
                    return
                if not self.done.is_set():
                    raise AssertionError(f"producer exited ({self.proc.returncode}) while waiting for {what}:\n"
                                         f"{log_tail(self._log, 30)}\n{self._broker_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what} ({len(self.acked)} acked, "
                                     f"{len(self.failed)} failed{self._failure_reasons()}):\n"
                                     f"{self._broker.stall_report(self.topic)}\n"
                                     f"-- the producer's log:\n{log_tail(self._log, 15)}\n{self._broker_tail()}")
            time.sleep(0.2)

    def _failure_reasons(self) -> str:
        counts = collections.Counter(reason[:160] for reason in self.failed.values())
        return "".join(f"; {n} x {reason}" for reason, n in counts.most_common(2))

    def _broker_tail(self) -> str:
        # The broker's side of a stall (its BookKeeper client's ensemble changes, ledger errors), most recent
        # last; stack frames left out, so that a CI log's excerpt still reaches the end.
        lines = [line for line in log_tail(self._broker.log_path, 400).splitlines() if not line.startswith("\t")]
        return "-- the broker's log:\n" + "\n".join(lines[-40:])

    def finish(self, timeout: float = 300) -> None:
        """Stop an open-ended producer (or wait for a counted one) until every send has its outcome."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.write(b"stop\n")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self.wait_for(self.done.is_set, timeout, "the producer to finish")
        self.proc.wait(timeout)
        self._reader.join(timeout)
        self._err.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            terminate(self.proc, 5)
        self._err.close()


def consume(broker: PulsarBroker, topic: str, subscription: str, count: int, idle_s: int = 20,
            timeout: float = 300) -> list[tuple[int, str, str]]:
    """Every message of a topic from the earliest, through Pulsar's Java client: (seq, key, sha256) in order."""
    cmd = broker.classpath.harness_command(
        "consume", broker.service_url, f"persistent://{topic}", subscription, str(count), str(idle_s),
        log_config=broker.client_log_config, tmp=broker.data_dir / "tmp")
    done = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise AssertionError(f"consumer failed ({done.returncode}): {done.stderr.decode()[-4000:]}")
    out = []
    for line in done.stdout.decode().splitlines():
        parts = line.split()
        if parts and parts[0] == "MSG":
            out.append((int(parts[1]), parts[2], parts[3]))
    return out
