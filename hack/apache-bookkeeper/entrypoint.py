#!/usr/bin/env python3
"""Entry point of the Java bookie image, like Apache BookKeeper's own image's ``scripts/entrypoint.sh``.

Starts from ``/opt/bookkeeper/conf/bk_server.conf`` (the pod mounts its own over the image's), applies every
``BK_<key>=<value>`` environment variable as ``<key>=<value>``, writes the result to $TMPDIR (the image's
only writable place besides the bookie's volumes) and runs

    bookie             org.apache.bookkeeper.server.Main (the default command)
    shell ARGS...      org.apache.bookkeeper.bookie.BookieShell
    archive-classes    at the image's build: writes its class-data archive (below)
    anything else      as given (e.g. ``java -version``)

with the jars of /opt/bookkeeper/lib. BOOKIE_MEM_OPTS replaces the default heap settings, BOOKIE_EXTRA_OPTS adds
JVM options.

Both JVMs map the image's class-data archive (``-XX:SharedArchiveFile``): the classes a bookie of this image loaded
from its start to serving reads and writes, archived by the image's build (``archive-classes``: a ZooKeeper and a
bookie on the build's loopback, BookieShell's ``simpletest`` through it, the archive written as the bookie stops).
A JVM that maps them skips reading, verifying and linking each class from its jar again, most of what a bookie
spends before it serves. The JVM checks the archive against its runtime and classpath itself and ignores one that
does not match (``-Xshare:auto``, the default): the jars are given by name, sorted, because a ``lib/*`` wildcard
is expanded in the directory's own order, which differs from one filesystem to another.

In the operator's pods, BOOKIE_FLEET_BOOKKEEPER_VERSIONS names the Apache BookKeeper lines the operator manages
(``4.17,4.18``): ``bookie`` refuses to start any other, before the JVM, with an ``UnsupportedVersion: ...``
termination message naming the version found and the supported ones, which the operator shows in Degraded. The
version is the one of the bookkeeper-server jar on the classpath (its Maven properties), so an image rebuilt with
other jars says what it really runs. Outside the operator's pods the variable is unset and nothing is checked.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

HOME = Path("/opt/bookkeeper")
# Both also in the operator (bookie_operator.models, .decisions.start_failures): this image has no bookie-fleet
# package to import them from; a test holds the two to each other.
VERSIONS_ENV = "BOOKIE_FLEET_BOOKKEEPER_VERSIONS"
UNSUPPORTED_VERSION = "UnsupportedVersion"
TERMINATION_ENV = "BOOKIE_TERMINATION_LOG"
TERMINATION_LOG = "/dev/termination-log"
SERVER_PROPERTIES = "META-INF/maven/org.apache.bookkeeper/bookkeeper-server/pom.properties"
CONF = HOME / "conf" / "bk_server.conf"
ARCHIVE = HOME / "bookie.jsa"
# The classes the operator configures a Java bookie with (bookie_operator.builders.bookie_config; this image has
# no bookie-fleet package to import them from, and a test holds the two to each other): the archive's bookie loads
# those of a deployed one.
OPERATOR_CLASSES = {"httpServerClass": "org.apache.bookkeeper.http.vertx.VertxHttpServer",
                    "statsProviderClass": "org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider",
                    "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"}
# The JVM's notes about the archive (one that does not match its classpath is ignored) would land in the bookie's
# log.
ARCHIVE_QUIET = "-Xlog:cds*=off"
MEM_OPTS = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m")
JVM_OPTS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
            "-Dio.netty.tryReflectionSetAccessible=true", f"-Dlog4j2.configurationFile={HOME}/conf/log4j2.properties",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-opens", "java.base/java.io=ALL-UNNAMED",
            "--add-opens", "java.base/java.util.zip=ALL-UNNAMED")


def build_conf(env: dict[str, str], base: str) -> str:
    """``base`` with each BK_<key> of ``env`` replacing (or adding) ``key``."""
    overrides = {k[3:]: v for k, v in env.items() if k.startswith("BK_") and len(k) > 3}
    kept = [line for line in base.splitlines() if line.split("=", 1)[0].strip() not in overrides]
    return "\n".join([*kept, *(f"{k}={v}" for k, v in sorted(overrides.items()))]) + "\n"


def classpath(lib: Path) -> str:
    """The jars of ``lib``, sorted by name: the one order the image's class-data archive was written with."""
    jars = sorted(str(jar) for jar in lib.glob("*.jar"))
    return ":".join(jars) if jars else f"{lib}/*"


def archive_options(archive: Path = ARCHIVE) -> list[str]:
    """The options that map the image's class-data archive; none before the build wrote it."""
    return [ARCHIVE_QUIET, f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else []


def command(argv: list[str], env: dict[str, str], conf_path: str) -> list[str]:
    mem = env["BOOKIE_MEM_OPTS"].split() if env.get("BOOKIE_MEM_OPTS") else list(MEM_OPTS)
    prefix = ["java", *mem, *JVM_OPTS, *archive_options(), *env.get("BOOKIE_EXTRA_OPTS", "").split(),
              "-cp", classpath(HOME / "lib")]
    what = argv[0] if argv else "bookie"
    if what == "bookie":
        return [*prefix, "org.apache.bookkeeper.server.Main", "--conf", conf_path, *argv[1:]]
    if what == "shell":
        return [*prefix, "org.apache.bookkeeper.bookie.BookieShell", "-conf", conf_path, *argv[1:]]
    return list(argv)


def bookkeeper_version(lib: Path) -> str | None:
    """The version of the bookkeeper-server jar in ``lib`` (Apache's own image prefixes the group to the file
    name), from the Maven properties it carries; None when there is none."""
    for jar in sorted(lib.glob("*bookkeeper-server-*.jar")):
        try:
            with zipfile.ZipFile(jar) as z:
                text = z.read(SERVER_PROPERTIES).decode()
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "version" and value.strip():
                return value.strip()
    return None


def unsupported(lib: Path, env: Mapping[str, str]) -> str | None:
    """Why the bookie of ``lib`` must not start where ``VERSIONS_ENV`` names the supported lines (major.minor);
    None when it is one of them, or nothing is named."""
    supported = [v.strip() for v in env.get(VERSIONS_ENV, "").split(",") if v.strip()]
    if not supported:
        return None
    found = bookkeeper_version(lib)
    if found is not None and ".".join(found.split(".")[:2]) in supported:
        return None
    runs = f"Apache BookKeeper {found}" if found else f"no Apache BookKeeper bookie (no bookkeeper-server jar in {lib})"
    return (f"the image runs {runs}, the operator supports Apache BookKeeper {', '.join(supported)} "
            f"({VERSIONS_ENV}): set spec.image to an image of one of those versions")


def refuse(reason: str, message: str, env: Mapping[str, str]) -> int:
    """Say why on stderr and in the termination message (Kubernetes' file, when it exists; ``TERMINATION_ENV``
    names another, "" none), as bookie-fleet's bookie does; the exit status of a failed start."""
    print(f"bookkeeper entrypoint: bookie cannot start ({reason}): {message}", file=sys.stderr)
    path = env.get(TERMINATION_ENV, TERMINATION_LOG if os.path.exists(TERMINATION_LOG) else "")
    if path:
        try:
            with open(path, "w") as out:
                out.write(f"{reason}: {message}")
        except OSError as exc:  # the reason above is what matters, not this
            print(f"bookkeeper entrypoint: cannot write the termination message to {path}: {exc}", file=sys.stderr)
    return 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.2)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def archive_classes(work: Path, archive: Path = ARCHIVE) -> None:
    """Write ``archive``: the classes a bookie of this image loads from its start to serving a client's adds and
    reads. A ZooKeeper (from the image's own jars) and a bookie on the loopback, with the settings the operator
    gives a Java bookie (DbLedgerStorage, Vert.x admin server, Prometheus stats), BookieShell's ``simpletest``
    through it, then the bookie stopped (SIGTERM: the JVM writes the archive as it exits)."""
    cp = classpath(HOME / "lib")
    zk_port, bookie_port, http_port, stats_port = (free_port() for _ in range(4))
    env = {"BK_metadataServiceUri": f"zk+hierarchical://127.0.0.1:{zk_port}/ledgers",
           "BK_bookiePort": str(bookie_port), "BK_bookieId": f"127.0.0.1:{bookie_port}",
           "BK_advertisedAddress": "127.0.0.1", "BK_allowLoopback": "true",
           "BK_journalDirectories": f"{work}/journal", "BK_ledgerDirectories": f"{work}/ledgers",
           "BK_journalSyncData": "false", "BK_useHostNameAsBookieID": "false",
           "BK_httpServerEnabled": "true", "BK_httpServerPort": str(http_port),
           "BK_prometheusStatsHttpPort": str(stats_port),
           **{f"BK_{key}": value for key, value in OPERATOR_CLASSES.items()},
           "BK_dbStorage_writeCacheMaxSizeMb": "16", "BK_dbStorage_readAheadCacheMaxSizeMb": "16",
           "BK_diskUsageThreshold": "0.999", "BK_diskUsageWarnThreshold": "0.998"}
    conf = work / "bk_server.conf"
    conf.write_text(build_conf(env, CONF.read_text() if CONF.is_file() else ""))
    with open(work / "archive-classes.log", "wb") as log:
        zookeeper = subprocess.Popen(["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                      "-Dzookeeper.admin.enableServer=false", "-cp", cp,
                                      "org.apache.zookeeper.server.ZooKeeperServerMain", str(zk_port),
                                      str(work / "zookeeper")], stdout=log, stderr=subprocess.STDOUT)
        bookie = None
        try:
            wait_until(lambda: listening(zk_port), "ZooKeeper listening")
            subprocess.run(command(["shell", "initnewcluster"], {}, str(conf)), stdout=log,
                           stderr=subprocess.STDOUT, timeout=120, check=True)
            training = {"BOOKIE_EXTRA_OPTS": f"-XX:ArchiveClassesAtExit={archive}"}
            bookie = subprocess.Popen(command(["bookie"], training, str(conf)), stdout=log, stderr=subprocess.STDOUT)
            wait_until(lambda: http_ok(f"http://127.0.0.1:{http_port}/api/v1/bookie/is_ready"), "the bookie ready")
            subprocess.run(command(["shell", "simpletest", "-ensemble", "1", "-writeQuorum", "1", "-ackQuorum", "1",
                                    "-numEntries", "500"], {}, str(conf)),
                           stdout=log, stderr=subprocess.STDOUT, timeout=120, check=True)
            bookie.send_signal(signal.SIGTERM)
            bookie.wait(timeout=120)
        finally:
            for process in (bookie, zookeeper):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
        if not archive.is_file():
            raise RuntimeError(f"the bookie stopped without writing {archive}")
        # Every JVM of the image must be able to map it: -Xshare:on makes one that cannot an error.
        subprocess.run(["java", "-Xshare:on", *archive_options(archive), "-cp", cp, "-version"],
                       stdout=log, stderr=subprocess.STDOUT, timeout=60, check=True)


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    if argv[:1] == ["archive-classes"]:
        with tempfile.TemporaryDirectory(prefix="archive-classes-") as work:
            try:
                archive_classes(Path(work))
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                log = Path(work) / "archive-classes.log"
                tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
                print(f"bookkeeper entrypoint: the class-data archive was not written: {exc}\n{tail}",
                      file=sys.stderr)
                return 1
        print(f"bookkeeper entrypoint: wrote {ARCHIVE} ({ARCHIVE.stat().st_size // 1_000_000} MB)")
        return 0
    if (argv[0] if argv else "bookie") == "bookie":
        why = unsupported(HOME / "lib", env)
        if why is not None:
            return refuse(UNSUPPORTED_VERSION, why, env)
    base = CONF.read_text() if CONF.is_file() else ""
    try:
        fd, conf_path = tempfile.mkstemp(prefix="bk_server-", suffix=".conf")
    except OSError as exc:
        print(f"bookkeeper entrypoint: cannot write the configuration to {tempfile.gettempdir()}: {exc}; "
              "mount a writable volume there (e.g. an emptyDir at /tmp) or set TMPDIR", file=sys.stderr)
        return 2
    with os.fdopen(fd, "w") as out:
        out.write(build_conf(env, base))
    cmd = command(argv, env, conf_path)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
