#!/usr/bin/env python3
"""Entry point of the Java bookie image, like Apache BookKeeper's own image's ``scripts/entrypoint.sh``.

Starts from ``/opt/bookkeeper/conf/bk_server.conf`` (the pod mounts its own over the image's), applies every
``BK_<key>=<value>`` environment variable as ``<key>=<value>``, writes the result to $TMPDIR (the image's
only writable place besides the bookie's volumes) and runs

    bookie             org.apache.bookkeeper.server.Main (the default command)
    shell ARGS...      org.apache.bookkeeper.bookie.BookieShell
    anything else      as given (e.g. ``java -version``)

with the classpath of /opt/bookkeeper/lib. BOOKIE_MEM_OPTS replaces the default heap settings,
BOOKIE_EXTRA_OPTS adds JVM options.

In the operator's pods, BOOKIE_FLEET_BOOKKEEPER_VERSIONS names the Apache BookKeeper lines the operator manages
(``4.17,4.18``): ``bookie`` refuses to start any other, before the JVM, with an ``UnsupportedVersion: ...``
termination message naming the version found and the supported ones, which the operator shows in Degraded. The
version is the one of the bookkeeper-server jar on the classpath (its Maven properties), so an image rebuilt with
other jars says what it really runs. Outside the operator's pods the variable is unset and nothing is checked.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping
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


def command(argv: list[str], env: dict[str, str], conf_path: str) -> list[str]:
    mem = env["BOOKIE_MEM_OPTS"].split() if env.get("BOOKIE_MEM_OPTS") else list(MEM_OPTS)
    prefix = ["java", *mem, *JVM_OPTS, *env.get("BOOKIE_EXTRA_OPTS", "").split(), "-cp", f"{HOME}/lib/*"]
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


def main(argv: list[str]) -> int:
    env = dict(os.environ)
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
