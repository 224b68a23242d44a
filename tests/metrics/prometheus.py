"""A real Prometheus server (Debian's package, ``/usr/bin/prometheus``) as a plain process: generated config,
temporary data directory, HTTP API on a free local port; queried through its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from bookie_fleet.processes import free_port

BINARY = "/usr/bin/prometheus"


@dataclass(frozen=True)
class Target:
    address: str  # host:port serving /metrics
    labels: dict[str, str]
    credentials_file: Path | None = None  # a bearer token Prometheus presents (a job of its own)


@dataclass
class Prometheus:
    data_dir: Path
    targets: list[Target]
    rule_files: list[Path] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)   # scrape jobs of their own (tests/metrics/podmonitor.py)
    scrape_interval_s: float = 2.0
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict[str, Any]:
        interval = f"{self.scrape_interval_s:g}s"
        return {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(p) for p in self.rule_files],
            "scrape_configs": [self._job(i, credentials) for i, credentials in
                               enumerate(dict.fromkeys(t.credentials_file for t in self.targets))] + self.jobs,
        }

    def _job(self, index: int, credentials: Path | None) -> dict[str, Any]:
        """The targets that present ``credentials`` (None: none); the first job is ``bookie``."""
        job: dict[str, Any] = {
            "job_name": "bookie" if index == 0 else f"bookie-{index}", "metrics_path": "/metrics",
            "static_configs": [{"targets": [t.address], "labels": t.labels} for t in self.targets
                               if t.credentials_file == credentials]}
        if credentials is not None:
            job["authorization"] = {"type": "Bearer", "credentials_file": str(credentials)}
        return job

    def start(self) -> Prometheus:
        if not Path(BINARY).exists():
            raise RuntimeError(f"{BINARY} is missing: run scripts/bootstrap (scripts/bootstrap.d/prometheus.sh)")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir / "prometheus.yml"
        conf.write_text(yaml.safe_dump(self.config()))
        self.port = free_port("127.0.0.1")
        log = (self.data_dir / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [BINARY, f"--config.file={conf}", f"--storage.tsdb.path={self.data_dir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-lifecycle"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.data_dir / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("prometheus did not become ready in 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.data_dir / "tsdb", ignore_errors=True)

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as r:
            answer = json.load(r)
        if answer.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {answer}")
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant vector (a scalar comes back as one unlabeled sample)."""
        data = self.api("query", query=expr)
        if data["resultType"] == "vector":
            return list(data["result"])
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        raise RuntimeError(f"{expr}: a {data['resultType']}, not an instant vector")

    def targets_up(self) -> dict[str, str]:
        return {t["scrapeUrl"]: t["health"] + (f" ({t['lastError']})" if t.get("lastError") else "")
                for t in self.api("targets")["activeTargets"]}

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("alerts")["alerts"])
