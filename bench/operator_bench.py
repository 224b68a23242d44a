"""Operator benchmark: reconcile latency, read-only reaction time and Kubernetes API requests per minute per
idle BookieCluster, with 1, 10 and 50 BookieClusters in one operator. This is a benchmark, not a test.

    python bench/operator_bench.py                          # 1, 10, 50 clusters; writes docs/operator-benchmarks.md
    python bench/operator_bench.py --counts 1 10 --no-docs  # shorter, prints only

Everything is real: the local control plane (localkube), a ZooKeeper, the operator as its own process, and
one Python bookie per BookieCluster (replicas 1, ensembleSize 1; cluster 0 has two). Clusters are added
step by step (1, then up to 10, then up to 50), and each step measures:

- reconcile latency: the time from a spec change (a bookie config override) on cluster 0 until its
  StatefulSet carries the new config checksum (median of 3);
- read-only reaction: the time from filling cluster 0's bookie disk past the high-water mark (a tmpfs
  volume) until the bookie itself reports read-only, and from freeing it until it reports writable again.
  The operator ticks every --interval seconds, so the expected value is about half an interval plus the
  time of one reconcile;
- Kubernetes API requests per minute per idle cluster, from the operator's own Prometheus counter, counted
  over 3 ticks;
- the operator's CPU seconds per minute and its resident memory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bookie_fleet.processes import free_port
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import crd
from localkube.binaries import find_binary
from localkube.cluster import LocalCluster

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "operator-benchmarks.md"
NS = "bench"
API = f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{NS}/{crd.models.PLURAL}"


def wait(check: Any, timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


class Bench:
    def __init__(self, work: Path, interval: float) -> None:
        self.work = work
        self.interval = interval
        self.cluster = LocalCluster(work / "cluster", ephemeral_ports=True)
        self.zk = ZooKeeperServer(work / "zk")
        self.api = None  # type: Any
        self.operator: subprocess.Popen[bytes] | None = None
        self.metrics_port = free_port()
        self.tmpfs = work / "tmpfs"
        self.mounts: list[Path] = []
        self.count = 0

    # ------------------------------------------------------------------------------- set-up
    def kubectl(self, *args: str, input: str | None = None) -> str:
        env = {**os.environ, "KUBECONFIG": str(self.cluster.admin_kubeconfig)}
        out = subprocess.run([str(find_binary("kubectl")), *args], input=input, capture_output=True, text=True,
                             env=env, check=True)
        return out.stdout

    def start(self) -> None:
        self.cluster.up()
        self.api = self.cluster.api("operator-bench")
        # Where the cluster's pods reach this machine (and so does the operator run here).
        self.zk = ZooKeeperServer(self.work / "zk", host=self.cluster.host_ip)
        self.zk.start()
        self.kubectl("apply", "--server-side", "-f", "-", input=crd.render())
        self.kubectl("create", "namespace", NS)
        env = {**os.environ, "KUBECONFIG": str(self.cluster.admin_kubeconfig)}
        log = open(self.work / "operator.log", "ab")  # the child keeps it open
        self.operator = subprocess.Popen(
            [sys.executable, "-m", "bookie_operator", "--namespace", NS, "--interval", str(self.interval),
             "--metrics-port", str(self.metrics_port), "--liveness", "", "--log-format", "plain"],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def stop(self) -> None:
        try:
            for i in range(self.count):
                self.api.delete(f"{API}/bk-{i}")
            wait(lambda: not self.api.request("GET", API)["items"], 120, "clusters deleted", 1)
        finally:
            if self.operator is not None and self.operator.poll() is None:
                os.killpg(self.operator.pid, signal.SIGTERM)
                self.operator.wait(20)
            self.zk.stop()
            self.cluster.down()
            for path in self.mounts:
                subprocess.run(["umount", "-l", str(path)], check=False)

    def add_clusters(self, upto: int) -> float:
        """Create clusters until there are ``upto``; returns the seconds until all are Ready."""
        began = time.monotonic()
        for i in range(self.count, upto):
            ledgers: dict[str, Any] = {"size": "1Gi"}
            policy: dict[str, Any] = {}
            config: dict[str, Any] = {}
            if i == 0:
                self._small_volume()
                ledgers = {"size": "256Mi", "storageClassName": "bench-small"}
                policy = {"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95}
                config = {"diskCheckInterval": 1000}  # the bookie's own disk figures refresh every second
            body = {"apiVersion": f"{crd.models.GROUP}/{crd.models.VERSION}", "kind": crd.models.KIND,
                    "metadata": {"name": f"bk-{i}", "namespace": NS},
                    # Cluster 0 has a second bookie: the operator never makes the last writable one read-only.
                    "spec": {"replicas": 2 if i == 0 else 1, "ensembleSize": 1,
                             "metadataService": {"zkServers": self.zk.connect_string, "ledgersRoot": f"/b{i}/ledgers"},
                             "storage": {"journal": {"size": "1Gi"}, "ledgers": ledgers},
                             "diskPolicy": policy, "config": config, "autorecovery": {"enabled": False}}}
            self.api.create(API, body)
        self.count = upto

        def all_ready() -> bool:
            items = self.api.request("GET", API)["items"]
            return len(items) == upto and all(
                any(c["type"] == "Ready" and c["status"] == "True" for c in i.get("status", {}).get("conditions", []))
                for i in items)

        wait(all_ready, 120 + 10 * upto, f"{upto} clusters Ready", 1)
        return time.monotonic() - began

    def _small_volume(self) -> None:
        """Size-limited ledger volumes for cluster 0's two bookies; bookie 0's is the one filled."""
        for ordinal in (0, 1):
            path = self.tmpfs if ordinal == 0 else self.work / "tmpfs-1"
            path.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(path)], check=True)
            self.mounts.append(path)
            self.api.create("/api/v1/persistentvolumes", {
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"bench-small-{ordinal}"},
                "spec": {"capacity": {"storage": "256Mi"}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "bench-small",
                         "hostPath": {"path": str(path), "type": "Directory"},
                         "claimRef": {"namespace": NS, "name": f"ledgers-0-bk-0-{ordinal}"}}})

    # ------------------------------------------------------------------------------ measures
    def metric(self, name: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))

    def operator_cpu_and_rss(self) -> tuple[float, int]:
        assert self.operator is not None
        fields = Path(f"/proc/{self.operator.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        return cpu, rss

    def idle_rates(self) -> tuple[float, float]:
        """(API requests per minute per cluster, operator CPU seconds per minute) over 3 ticks."""
        window = 3 * self.interval
        req0, (cpu0, _) = self.metric("bookie_operator_kube_api_requests_total"), self.operator_cpu_and_rss()
        time.sleep(window)
        req1, (cpu1, _) = self.metric("bookie_operator_kube_api_requests_total"), self.operator_cpu_and_rss()
        return (req1 - req0) / window * 60 / self.count, (cpu1 - cpu0) / window * 60

    def reconcile_latency(self, value: int) -> float:
        sts_path = f"/apis/apps/v1/namespaces/{NS}/statefulsets/bk-0"

        def checksum() -> str:
            sts = self.api.get(sts_path)
            return str(sts["spec"]["template"]["metadata"]["annotations"][f"{crd.models.GROUP}/config-checksum"])

        before = checksum()
        began = time.monotonic()
        self.kubectl("-n", NS, "patch", f"{crd.models.PLURAL}.{crd.models.GROUP}", "bk-0", "--type", "merge",
                     "-p", json.dumps({"spec": {"config": {"flushInterval": value, "diskCheckInterval": 1000}}}))
        wait(lambda: checksum() != before, 60, "the StatefulSet updated", 0.02)
        return time.monotonic() - began

    def bookie_read_only(self) -> bool | None:
        pod = self.api.get(f"/api/v1/namespaces/{NS}/pods/bk-0-0")
        try:
            ip = pod["status"]["podIP"]
            with urllib.request.urlopen(f"http://{ip}:8080/api/v1/bookie/state", timeout=2) as resp:
                return bool(json.loads(resp.read())["readOnly"])
        except (OSError, KeyError, TypeError, ValueError):
            return None

    def rolled_out(self) -> bool:
        sts = self.api.get(f"/apis/apps/v1/namespaces/{NS}/statefulsets/bk-0")
        pod = self.api.get(f"/api/v1/namespaces/{NS}/pods/bk-0-0")
        if not sts or not pod or pod["metadata"].get("deletionTimestamp"):
            return False
        revision = sts.get("status", {}).get("updateRevision")
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))
        return ready and pod["metadata"]["labels"].get("controller-revision-hash") == revision

    def read_only_reaction(self) -> tuple[float, float]:
        wait(self.rolled_out, 180, "bookie 0 restarted with its new configuration", 0.5)
        wait(lambda: self.bookie_read_only() is False, 120, "bookie 0 writable", 0.5)
        st = os.statvfs(self.tmpfs)
        ballast = self.tmpfs / "ballast.bin"
        with open(ballast, "wb") as out:
            out.write(b"\0" * int(st.f_blocks * st.f_frsize * 0.6))
        began = time.monotonic()
        wait(lambda: self.bookie_read_only() is True, 60, "bookie 0 read-only", 0.05)
        to_ro = time.monotonic() - began
        began = time.monotonic()
        ballast.unlink()
        wait(lambda: self.bookie_read_only() is False, 60, "bookie 0 writable", 0.05)
        return to_ro, time.monotonic() - began


def run(counts: list[int], interval: float) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="operator-bench-") as tmp:
        bench = Bench(Path(tmp), interval)
        bench.start()
        try:
            for n in counts:
                ready_s = bench.add_clusters(n)
                time.sleep(interval)  # settle: first ticks after Ready
                api_rate, cpu_rate = bench.idle_rates()
                latencies = [bench.reconcile_latency(1000 + 100 * n + k) for k in range(3)]
                wait(lambda: all(any(c["type"] == "Ready" and c["status"] == "True"
                                     for c in i.get("status", {}).get("conditions", []))
                                 for i in bench.api.request("GET", API)["items"]), 300, "rollouts done", 1)
                to_ro, to_rw = bench.read_only_reaction()
                _, rss = bench.operator_cpu_and_rss()
                row = {"clusters": n, "ready_s": ready_s, "reconcile_latency_s": statistics.median(latencies),
                       "read_only_s": to_ro, "writable_s": to_rw, "api_requests_per_min_per_cluster": api_rate,
                       "operator_cpu_s_per_min": cpu_rate, "operator_rss_mib": rss / 2**20}
                print(json.dumps(row), flush=True)
                rows.append(row)
        finally:
            bench.stop()
    return rows


def render(rows: list[dict[str, Any]], interval: float) -> str:
    lines = [
        "# Operator benchmarks",
        "",
        f"Measured by `python bench/operator_bench.py` on {dt.date.today().isoformat()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; reconcile interval {interval:g} s. "
        "Local control plane, real ZooKeeper, one Python bookie per BookieCluster (see the script's docstring).",
        "",
        "| BookieClusters | all Ready after (s) | reconcile latency (s) | read-only reaction (s) | "
        "writable again (s) | API requests / min / idle cluster | operator CPU s / min | operator RSS (MiB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['clusters']} | {r['ready_s']:.0f} | {r['reconcile_latency_s']:.2f} | "
                     f"{r['read_only_s']:.2f} | {r['writable_s']:.2f} | "
                     f"{r['api_requests_per_min_per_cluster']:.1f} | {r['operator_cpu_s_per_min']:.1f} | "
                     f"{r['operator_rss_mib']:.0f} |")
    lines += ["", "Reconcile latency is event-driven (the update handler), so it does not wait for a tick; "
              "read-only reaction waits for the next tick (about half an interval on average).", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    rows = run(sorted(args.counts), args.interval)
    if not args.no_docs:
        DOCS.write_text(render(rows, args.interval))
        print(f"wrote {DOCS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
