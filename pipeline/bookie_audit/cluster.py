"""A local standalone Spark cluster (one master, N workers) from the pyspark distribution's own classes.

    with StandaloneCluster(workdir, workers=2) as cluster:
        subprocess.run([spark_submit(), "--master", cluster.master_url, cli_script(), "run", ...])

Each daemon is ``bin/spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker`` in its own
process group, bound to 127.0.0.1, logging to ``workdir``; ``stop()`` ends exactly those groups. Used by the
tests and the benchmark; also ``python -m bookie_audit.cluster --workers 2 DIR`` to keep one running.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import bookie_audit


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_submit() -> str:
    return str(spark_home() / "bin" / "spark-submit")


def cli_script() -> str:
    """The file spark-submit runs: ``bookie_audit/cli.py`` (``if __name__ == "__main__"``)."""
    return str(Path(bookie_audit.__file__).resolve().parent / "cli.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def daemon_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    return env


class StandaloneCluster:
    def __init__(self, workdir: str | Path, workers: int = 2, cores_per_worker: int = 1,
                 memory_per_worker: str = "1g", start_timeout_s: float = 120.0) -> None:
        self.workdir = Path(workdir)
        self.workers = workers
        self.cores = cores_per_worker
        self.memory = memory_per_worker
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # the child keeps its own descriptor
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=daemon_env(),
                                cwd=self.workdir, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def start(self) -> StandaloneCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(_free_port())])
        try:
            self._wait_for("master.log", "I have been elected leader", 1)
            for i in range(self.workers):
                work = self.workdir / f"worker{i}"
                work.mkdir(exist_ok=True)
                self._spawn(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                           "--cores", str(self.cores), "--memory", self.memory,
                                           "--work-dir", str(work), "--webui-port", str(_free_port()),
                                           self.master_url])
            self._wait_for("master.log", "Registering worker", self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for(self, log_name: str, text: str, count: int) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        path = self.workdir / log_name
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({proc.returncode}); see {self.workdir}/*.log")
            if path.exists() and path.read_text(errors="replace").count(text) >= count:
                return
            time.sleep(0.2)
        raise TimeoutError(f"Spark standalone cluster not up after {self.start_timeout_s}s: "
                           f"{text!r} x{count} not in {path}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bookie_audit.cluster",
                                description="run a local standalone Spark cluster until interrupted")
    p.add_argument("workdir")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--memory", default="1g")
    args = p.parse_args(argv)
    with StandaloneCluster(args.workdir, args.workers, args.cores, args.memory) as cluster:
        print(f"master {cluster.master_url}; logs in {args.workdir}; Ctrl-C to stop", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
