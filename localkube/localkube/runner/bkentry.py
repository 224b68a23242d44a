"""Entry point standing in for Apache BookKeeper's image (``apache/bookkeeper``), run inside the pod.

Like the image's ``scripts/entrypoint.sh``: start from ``/opt/bookkeeper/conf/bk_server.conf`` if the pod
mounts one, apply every ``BK_<key>=<value>`` environment variable as ``<key>=<value>``, and run
``bookie`` (``org.apache.bookkeeper.server.Main``) or ``shell`` (``BookieShell``) with the classpath
assembled from Maven Central (``$BOOKIE_FLEET_BK_LIB``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

CONF = Path("/opt/bookkeeper/conf/bk_server.conf")
JVM_OPTS = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
            "-Dio.netty.tryReflectionSetAccessible=true",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-opens", "java.base/java.io=ALL-UNNAMED",
            "--add-opens", "java.base/java.util.zip=ALL-UNNAMED")


def build_conf(env: dict[str, str], base: str) -> str:
    lines = [line for line in base.splitlines()]
    overrides = {k[3:]: v for k, v in env.items() if k.startswith("BK_") and len(k) > 3}
    kept = [line for line in lines if line.split("=", 1)[0].strip() not in overrides]
    return "\n".join([*kept, *(f"{k}={v}" for k, v in sorted(overrides.items()))]) + "\n"


def main(argv: list[str]) -> int:
    lib = os.environ.get("BOOKIE_FLEET_BK_LIB")
    if not lib or not Path(lib).is_dir():
        print(f"apache/bookkeeper: $BOOKIE_FLEET_BK_LIB must name the BookKeeper jars (got {lib!r}); "
              "run ./scripts/bootstrap and start the cluster from its environment", file=sys.stderr)
        return 2
    base = CONF.read_text() if CONF.is_file() else ""
    fd, conf_path = tempfile.mkstemp(prefix="bk_server-", suffix=".conf")
    with os.fdopen(fd, "w") as out:
        out.write(build_conf(dict(os.environ), base))
    java = shutil.which("java") or "java"
    what = argv[0] if argv else "bookie"
    opts = os.environ.get("BOOKIE_EXTRA_OPTS", "").split() + os.environ.get("BOOKIE_MEM_OPTS", "").split()
    prefix = [java, *JVM_OPTS, *opts, "-cp", f"{lib}/*"]
    if what == "bookie":
        cmd = [*prefix, "org.apache.bookkeeper.server.Main", "--conf", conf_path, *argv[1:]]
    elif what == "shell":
        cmd = [*prefix, "org.apache.bookkeeper.bookie.BookieShell", "-conf", conf_path, *argv[1:]]
    else:
        cmd = list(argv)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
