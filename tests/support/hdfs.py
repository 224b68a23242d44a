"""A real HDFS for tests: Hadoop's MiniDFSCluster (one NameNode and one DataNode in a JVM, on 127.0.0.1).

``hdfs``: one cluster for the whole session, stopped at the end with nothing left running.

The JVM runs ``hack/hadoop/MiniHdfs.java`` on the classpath of ``hack/hadoop/pom.xml`` (both built by
``scripts/bootstrap.d/hadoop.sh``), which writes the NameNode's RPC and HTTP ports to a file once the cluster
serves requests and runs until its standard input closes: a test process that dies takes the cluster along.
Files go in through WebHDFS, as the user running the tests (the cluster's superuser: the JVM's user).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie_fleet.processes import java_tmpdir

LIB_ENV = "BOOKIE_FLEET_HADOOP_LIB"
CLASSES_ENV = "BOOKIE_FLEET_HADOOP_CLASSES"
# Client-compiler JIT and a small serial heap: the NameNode and DataNode of a test hold a few files.
_JVM_OPTS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")


class HdfsError(RuntimeError):
    """The cluster did not start (the message carries the end of its log)."""


class MiniHdfs:
    """``MiniHdfs(base_dir).start()``: a fresh, formatted HDFS whose data lives under ``base_dir``."""

    def __init__(self, base_dir: Path) -> None:
        lib, classes = os.environ.get(LIB_ENV), os.environ.get(CLASSES_ENV)
        if not lib or not classes or not Path(classes, "MiniHdfs.class").is_file():
            raise HdfsError(f"${LIB_ENV} and ${CLASSES_ENV} must name Hadoop's jars and the compiled MiniHdfs "
                            f"launcher (got {lib!r}, {classes!r}): run ./scripts/bootstrap")
        self.classpath = os.pathsep.join([classes, f"{lib}/*"])
        self.base_dir = base_dir
        self.details_path = base_dir / "ports.json"
        self.log_path = base_dir / "minihdfs.log"
        self.java = shutil.which("java") or "java"
        self.proc: subprocess.Popen[bytes] | None = None
        self.rpc_port = 0
        self.http_port = 0
        self.user = getpass.getuser()

    def start(self, timeout: float = 120.0) -> MiniHdfs:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.details_path.unlink(missing_ok=True)
        cmd = [self.java, *_JVM_OPTS, java_tmpdir(self.base_dir / "tmp"), "-cp", self.classpath, "MiniHdfs",
               str(self.base_dir / "cluster"), str(self.details_path)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.details_path.exists():
            if self.proc.poll() is not None:
                raise HdfsError(f"MiniHdfs exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise HdfsError(f"MiniHdfs not ready after {timeout}s:\n{self.log_tail()}")
            time.sleep(0.2)
        ports = json.loads(self.details_path.read_text())
        self.rpc_port, self.http_port = int(ports["rpc_port"]), int(ports["http_port"])
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Close the launcher's input: it shuts the cluster down and exits (else its process group is killed)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def uri(self, path: str = "/") -> str:
        """``webhdfs://127.0.0.1:<NameNode HTTP port><path>``."""
        return f"webhdfs://127.0.0.1:{self.http_port}/{path.lstrip('/')}"

    def _url(self, path: str, op: str, **params: object) -> str:
        query = urllib.parse.urlencode({"op": op, "user.name": self.user, **params})
        return f"http://127.0.0.1:{self.http_port}/webhdfs/v1/{urllib.parse.quote(path.lstrip('/'))}?{query}"

    def _call(self, method: str, url: str, data: bytes | None = None) -> bytes:
        headers = {"Content-Type": "application/octet-stream"} if data is not None else {}
        with urllib.request.urlopen(urllib.request.Request(url, data, headers, method=method), timeout=60) as resp:
            body: bytes = resp.read()
            return body

    def put_file(self, local: Path, remote: str) -> None:
        """Copy one file in, keeping its modification time (``hdfs dfs -put -p``), parent folders made."""
        # CREATE is two steps: the NameNode names a DataNode (noredirect: in the body, not a redirect that
        # urllib would not follow for a PUT), the data goes there.
        answer = json.loads(self._call("PUT", self._url(remote, "CREATE", overwrite="true", noredirect="true")))
        self._call("PUT", answer["Location"], local.read_bytes())
        mtime_ms = local.stat().st_mtime_ns // 1_000_000
        self._call("PUT", self._url(remote, "SETTIMES", modificationtime=mtime_ms, accesstime=-1))

    def put_tree(self, local: Path, remote: str) -> int:
        """Every file under ``local`` into ``remote`` (same relative paths); the number of files copied."""
        count = 0
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            self.put_file(path, f"{remote.rstrip('/')}/{path.relative_to(local).as_posix()}")
            count += 1
        return count


@pytest.fixture(scope="session")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniHdfs]:
    cluster = MiniHdfs(tmp_path_factory.mktemp("hdfs")).start()
    try:
        yield cluster
    finally:
        cluster.stop()
