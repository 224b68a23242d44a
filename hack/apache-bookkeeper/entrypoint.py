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
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HOME = Path("/opt/bookkeeper")
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


def main(argv: list[str]) -> int:
    base = CONF.read_text() if CONF.is_file() else ""
    try:
        fd, conf_path = tempfile.mkstemp(prefix="bk_server-", suffix=".conf")
    except OSError as exc:
        print(f"bookkeeper entrypoint: cannot write the configuration to {tempfile.gettempdir()}: {exc}; "
              "mount a writable volume there (e.g. an emptyDir at /tmp) or set TMPDIR", file=sys.stderr)
        return 2
    with os.fdopen(fd, "w") as out:
        out.write(build_conf(dict(os.environ), base))
    cmd = command(argv, dict(os.environ), conf_path)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
