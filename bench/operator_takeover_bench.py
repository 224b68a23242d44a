"""Operator high availability benchmark: how long the cluster goes without an active operator when the
leader dies. This is a benchmark, not a test.

    python bench/operator_takeover_bench.py                       # lease 15 s (the chart's), 3 rounds per mode
    python bench/operator_takeover_bench.py --rounds 1 --no-docs  # shorter, prints only

Everything is real: the local control plane (localkube), a ZooKeeper, and two `python -m bookie_operator`
processes with leader election on one Lease. Each round stops the current leader, either with SIGKILL (a node
lost: the lease is not released, the standby waits for it to expire) or with SIGTERM (a rolling update: the
leader releases the lease), at once creates a BookieCluster, and measures:

- lease taken over: from the stop until the Lease names the standby;
- first reconcile: from the stop until the new leader has applied the new BookieCluster's StatefulSet
  (Kopf started, the cluster's metadata initialised in ZooKeeper, the objects applied).

The stopped process is started again as the next standby.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import crd
from localkube.binaries import find_binary
from localkube.cluster import LocalCluster

NS = "takeover-bench"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "operator-benchmarks.md"
SECTION = "## Leader takeover"


def wait(check: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


class Replica:
    def __init__(self, name: str, work: Path, kubeconfig: Path, lease: float) -> None:
        self.name, self.work, self.kubeconfig, self.lease = name, work, kubeconfig, lease
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOSTNAME": self.name}
        log = open(self.work / f"{self.name}.log", "ab")  # the child keeps it open
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bookie_operator", "--namespace", NS, "--interval", "10", "--metrics-port", "0",
             "--liveness", "", "--log-format", "plain", "--leader-election-namespace", NS,
             "--lease-duration", str(self.lease)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def stop(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(30)


class Bench:
    def __init__(self, work: Path, lease: float) -> None:
        self.work, self.lease = work, lease
        self.cluster = LocalCluster(work / "cluster", ephemeral_ports=True)
        self.zk = ZooKeeperServer(work / "zk")
        self.api: Any = None
        self.replicas: dict[str, Replica] = {}

    def kubectl(self, *args: str, input: str | None = None) -> str:
        env = {**os.environ, "KUBECONFIG": str(self.cluster.admin_kubeconfig)}
        return subprocess.run([str(find_binary("kubectl")), *args], input=input, capture_output=True, text=True,
                              env=env, check=True).stdout

    def start(self) -> None:
        self.cluster.up()
        self.api = self.cluster.api("takeover-bench")
        # Where the cluster's pods reach this machine (and so does the operator run here).
        self.zk = ZooKeeperServer(self.work / "zk", host=self.cluster.host_ip)
        self.zk.start()
        self.kubectl("apply", "--server-side", "-f", "-", input=crd.render())
        self.kubectl("create", "namespace", NS)
        for name in ("op-a", "op-b"):
            self.replicas[name] = Replica(name, self.work, self.cluster.admin_kubeconfig, self.lease)
            self.replicas[name].start()

    def stop(self) -> None:
        try:
            base = f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{NS}/{crd.models.PLURAL}"
            for item in self.api.request("GET", base)["items"]:
                self.api.delete(f"{base}/{item['metadata']['name']}")
            wait(lambda: not self.api.request("GET", base)["items"], 120, "clusters deleted", 1)
        finally:
            for replica in self.replicas.values():
                replica.stop(signal.SIGTERM)
            self.zk.stop()
            self.cluster.down()

    def holder(self) -> str:
        lease = self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/bookie-operator")
        return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "").split("_")[0]

    def round(self, n: int, sig: signal.Signals) -> tuple[float, float]:
        leader = wait(self.holder, 120, "a leader")
        standby = next(name for name in self.replicas if name != leader)
        name = f"bk-{n}"
        manifest = {"apiVersion": f"{crd.models.GROUP}/{crd.models.VERSION}", "kind": crd.models.KIND,
                    "metadata": {"name": name, "namespace": NS},
                    "spec": {"replicas": 1, "ensembleSize": 1,
                             "metadataService": {"zkServers": self.zk.connect_string, "ledgersRoot": f"/{name}"}}}
        stopped = time.monotonic()
        self.replicas[leader].stop(sig)
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
        wait(lambda: self.holder() == standby, 120, "the standby holding the lease")
        lease = time.monotonic() - stopped
        wait(lambda: self.api.request("GET", f"/apis/apps/v1/namespaces/{NS}/statefulsets")["items"]
             and any(s["metadata"]["name"] == name
                     for s in self.api.request("GET", f"/apis/apps/v1/namespaces/{NS}/statefulsets")["items"]),
             180, f"StatefulSet {name} applied by the new leader")
        first = time.monotonic() - stopped
        self.replicas[leader].start()
        self.api.delete(f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{NS}/{crd.models.PLURAL}/{name}")
        print(f"  {sig.name}: lease taken over after {lease:.1f}s, first reconcile after {first:.1f}s", flush=True)
        return lease, first


def table(results: dict[str, list[tuple[float, float]]], lease: float, rounds: int) -> str:
    date = dt.date.today().isoformat()
    lines = [SECTION, "",
             f"Measured by `python bench/operator_takeover_bench.py` on {date}, {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}; lease duration {lease:.0f} s, "
             f"{rounds} rounds per mode, two operator processes on the local control plane with a real ZooKeeper "
             "(see the script's docstring). Median (max) seconds from stopping the leader.", "",
             "| leader stopped by | lease taken over (s) | first reconcile by the new leader (s) |",
             "|---|---:|---:|"]
    for mode, values in results.items():
        leases, firsts = [v[0] for v in values], [v[1] for v in values]
        lines.append(f"| {mode} | {statistics.median(leases):.1f} ({max(leases):.1f}) | "
                     f"{statistics.median(firsts):.1f} ({max(firsts):.1f}) |")
    lines += ["", "SIGKILL is a lost node: the standby waits for the lease to expire (its duration, counted "
              "from the last renewal it saw, plus one poll). SIGTERM is a rolling update: the leader releases "
              "the lease and the standby takes it at its next poll. The first reconcile adds Kopf's start-up "
              "and one reconcile of the new cluster.", ""]
    return "\n".join(lines)


def write_docs(text: str) -> None:
    current = DOCS.read_text()
    if SECTION in current:
        head, _, rest = current.partition(SECTION)
        tail = rest[rest.find("\n## "):] if "\n## " in rest else ""
        current = head.rstrip("\n") + "\n\n" + text + tail
    else:
        current = current.rstrip("\n") + "\n\n" + text
    DOCS.write_text(current)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-docs", action="store_true", help="print only, do not update the docs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="takeover-bench-") as tmp:
        bench = Bench(Path(tmp), args.lease_duration)
        results: dict[str, list[tuple[float, float]]] = {"SIGKILL": [], "SIGTERM": []}
        n = 0
        try:
            bench.start()
            for sig in (signal.SIGKILL, signal.SIGTERM):
                for _ in range(args.rounds):
                    results[sig.name].append(bench.round(n, sig))
                    n += 1
        finally:
            bench.stop()
    text = table(results, args.lease_duration, args.rounds)
    print(text)
    if not args.no_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
