"""The playground's story on Kubernetes: the product doing what it exists for, live, on this machine.

A local Kubernetes control plane, a real ZooKeeper, the operator installed by its Helm chart, and a
BookieCluster from examples/ with small ledger disks. Then what users of BookKeeper live through: a writer
fills the ledger disks; the operator turns the fullest bookie read-only; the application deletes most of its
ledgers, yet the disk stays full; the operator's scheduled compaction reclaims the space and the bookie
becomes writable again; the storage audit writes its HTML report of that fleet. Each step is timed and the
run ends with a table of what happened (``summary.json`` in the work directory holds the same).

Everything it starts (control plane, pods, ZooKeeper, tmpfs mounts) is stopped at the end, on Ctrl-C, or on
failure, unless ``--keep-running``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from bookie_audit.report import REPORT_NAME
from localkube.binaries import find_binary
from localkube.cluster import LocalCluster
from localkube.kapi import KubeAPI

from bookie_fleet.zookeeper import ZooKeeperServer

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "bookie-operator"
EXAMPLE = REPO / "examples" / "playground.yaml"
NAMESPACE = "bookie-fleet"
CLUSTER = "playground"
GROUP, VERSION, PLURAL = "bookie-fleet.dev", "v1beta1", "bookieclusters"
T = TypeVar("T")


class StoryFailed(RuntimeError):
    pass


@dataclass
class Sizes:
    """How big the story is: the full one for people, a short one for CI."""

    bookies: int = 3
    disk_mb: int = 96
    entry_kb: int = 256
    kept_every: int = 3          # one ledger in three survives the deletion

    @classmethod
    def short(cls) -> Sizes:
        return cls(disk_mb=48, entry_kb=128)

    @property
    def write_rate(self) -> float:
        """Bytes per second the writer sends: the first disk reaches 60% in about half a minute."""
        return self.disk_mb * 2**20 / 30


@dataclass
class Summary:
    steps: list[dict[str, Any]] = field(default_factory=list)
    read_only_bookie: str | None = None
    written_bytes: int = 0
    used_before_bytes: int = 0
    used_after_bytes: int = 0
    writable_again: bool = False
    report: str | None = None

    @property
    def reclaimed_bytes(self) -> int:
        return max(0, self.used_before_bytes - self.used_after_bytes)


def say(text: str) -> None:
    print(text, flush=True)


def wait_until(check: Callable[[], T | None], timeout: float, what: str, interval: float = 1.0,
               progress: Callable[[], str] | None = None) -> T:
    deadline = time.monotonic() + timeout
    last_line = ""
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if progress is not None:
            line = progress()
            if line != last_line:
                say(f"    {line}")
                last_line = line
        time.sleep(interval)
    raise StoryFailed(f"timed out after {timeout:.0f}s waiting for {what}")


class Story:
    def __init__(self, workdir: Path, sizes: Sizes, keep_running: bool = False) -> None:
        self.workdir = workdir
        self.sizes = sizes
        self.keep_running = keep_running
        self.summary = Summary()
        self.cluster = LocalCluster(workdir / "kube", ephemeral_ports=True)
        self._zk: ZooKeeperServer | None = None   # once the cluster is up: it listens where pods reach it
        self.mounts: list[Path] = []
        self.api: KubeAPI | None = None

    # ------------------------------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[dict[str, Any]]:
        say(f"\n== {title}")
        started = time.monotonic()
        record: dict[str, Any] = {"step": title}
        yield record
        record["seconds"] = round(time.monotonic() - started, 1)
        self.summary.steps.append(record)
        say(f"   done in {record['seconds']}s")

    def tool(self, name: str, *args: str, input: str | None = None, timeout: float = 300) -> str:
        env = {**os.environ, **self.cluster.kube_env(), "HELM_CACHE_HOME": str(self.workdir / "helm"),
               "HELM_CONFIG_HOME": str(self.workdir / "helm"), "HELM_DATA_HOME": str(self.workdir / "helm")}
        result = subprocess.run([str(find_binary(name)), *args], input=input, capture_output=True, text=True,
                                env=env, timeout=timeout)
        if result.returncode != 0:
            raise StoryFailed(f"{name} {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    @property
    def zk(self) -> ZooKeeperServer:
        assert self._zk is not None
        return self._zk

    def kube(self) -> KubeAPI:
        assert self.api is not None
        return self.api

    def bookie_cluster(self) -> dict[str, Any]:
        obj = self.kube().get(f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/{PLURAL}/{CLUSTER}")
        if obj is None:
            raise StoryFailed(f"BookieCluster {CLUSTER} disappeared")
        return obj

    def bookies(self) -> list[dict[str, Any]]:
        return list(self.bookie_cluster().get("status", {}).get("bookies", []))

    def disks(self) -> str:
        return "  ".join(f"{b['pod']} {b.get('diskUsedFraction', 0):.0%} {b.get('state', '?')}"
                         for b in self.bookies())

    def ledger_paths(self) -> dict[str, Path]:
        return {f"{CLUSTER}-{i}": self.workdir / "disks" / f"ledgers-0-{CLUSTER}-{i}"
                for i in range(self.sizes.bookies)}

    def used_bytes(self) -> int:
        total = 0
        for path in self.ledger_paths().values():
            stat = os.statvfs(path)
            total += (stat.f_blocks - stat.f_bfree) * stat.f_frsize
        return total

    # --------------------------------------------------------------------------------------- steps
    def run(self) -> Summary:
        with self.step("local Kubernetes, ZooKeeper"):
            self.cluster.up()
            self.api = self.cluster.api("bookie-fleet-playground")
            self._zk = ZooKeeperServer(self.workdir / "zookeeper", host=self.cluster.host_ip)
            self.zk.start()
            say(f"   API server {self.cluster.server}, ZooKeeper {self.zk.connect_string}")
        with self.step("operator installed by its Helm chart"):
            self.install_operator()
        with self.step(f"BookieCluster {CLUSTER} from {EXAMPLE.relative_to(REPO)}"):
            self.create_cluster()
        zk = self.zk.connect_string
        root = self.manifest()["spec"]["metadataService"]["ledgersRoot"]
        with self.step("a writer fills the ledger disks until the operator makes a bookie read-only") as rec:
            kept, dropped = asyncio.run(self.fill(zk, root))
            rec["read_only_bookie"] = self.summary.read_only_bookie
            rec["written_bytes"] = self.summary.written_bytes
        with self.step(f"the application deletes {len(dropped)} of {len(kept) + len(dropped)} ledgers"):
            asyncio.run(self.delete(zk, root, dropped))
            self.summary.used_before_bytes = self.used_bytes()
            say(f"   ledger disks still hold {self.summary.used_before_bytes / 2**20:.1f} MiB: nothing is "
                "reclaimed until GC and compaction run")
        with self.step("scheduled compaction reclaims the space; the bookie becomes writable again") as rec:
            self.reclaim()
            rec["reclaimed_bytes"] = self.summary.reclaimed_bytes
        with self.step("storage audit of the fleet (PySpark)") as rec:
            self.summary.report = str(self.audit(zk, root))
            rec["report"] = self.summary.report
        return self.summary

    def install_operator(self) -> None:
        with contextlib.suppress(Exception):
            self.kube().create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": NAMESPACE}})
        self.tool("helm", "install", "bookie-operator", str(CHART), "--namespace", NAMESPACE, "--wait",
                  "--timeout", "240s", *operator_image_values(), "--set", f"watchNamespaces={{{NAMESPACE}}}",
                  "--set", "reconcileInterval=3", "--set", "logFormat=plain")
        say("   operator pod Ready")

    def manifest(self) -> dict[str, Any]:
        manifest = yaml.safe_load(EXAMPLE.read_text())
        spec = manifest["spec"]
        spec["metadataService"]["zkServers"] = self.zk.connect_string
        spec["replicas"] = self.sizes.bookies
        spec["storage"]["ledgers"]["size"] = f"{self.sizes.disk_mb}Mi"
        manifest["metadata"]["namespace"] = NAMESPACE
        return dict(manifest)

    def create_cluster(self) -> None:
        manifest = self.manifest()
        storage_class = manifest["spec"]["storage"]["ledgers"]["storageClassName"]
        for claim, path in ((f"ledgers-0-{pod}", p) for pod, p in self.ledger_paths().items()):
            path.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.sizes.disk_mb}m", "tmpfs", str(path)],
                           check=True)
            self.mounts.append(path)
            self.kube().create("/api/v1/persistentvolumes", {
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{NAMESPACE}-{claim}"},
                "spec": {"capacity": {"storage": f"{self.sizes.disk_mb}Mi"}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": storage_class,
                         "hostPath": {"path": str(path), "type": "Directory"},
                         "claimRef": {"namespace": NAMESPACE, "name": claim}}})
        self.tool("kubectl", "apply", "-f", "-", input=yaml.safe_dump(manifest))

        def ready() -> bool:
            status = self.bookie_cluster().get("status", {})
            return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))

        wait_until(ready, 300, f"BookieCluster {CLUSTER} Ready", progress=lambda: self.progress_line())
        say(f"   {self.sizes.bookies} bookies Ready: {self.disks()}")

    def progress_line(self) -> str:
        status = self.bookie_cluster().get("status", {})
        return next((c.get("message", "") for c in status.get("conditions", []) if c["type"] == "Progressing"),
                    "waiting for the operator")

    async def fill(self, zk: str, root: str) -> tuple[list[int], list[int]]:
        from bookie.client import BookKeeper, ClientConfig

        payload = os.urandom(self.sizes.entry_kb * 1024)
        kept: list[int] = []
        dropped: list[int] = []
        async with BookKeeper(ClientConfig(zk_servers=zk, ledgers_root=root)) as bk:
            handles = []
            for n in range(self.sizes.kept_every):
                # Ensembles of 2 out of 3: a bookie that refuses an add can be replaced by the third.
                handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2,
                                                custom_metadata={"application": b"playground"})
                handles.append(handle)
                (kept if n == 0 else dropped).append(handle.ledger_id)
            last = ""
            started = time.monotonic()
            while self.summary.read_only_bookie is None:
                if time.monotonic() - started > 600:
                    raise StoryFailed("no bookie went read-only within 10 minutes of writing")
                # Interleaved ledgers: every entry log ends up mostly garbage once the others are deleted.
                for handle in handles:
                    await handle.add(payload)
                    self.summary.written_bytes += len(payload)
                # Paced so that the operator (a few seconds per reconcile) acts near its high-water mark
                # rather than after the disk is full: a full disk leaves compaction no room to copy live data.
                ahead = self.summary.written_bytes / self.sizes.write_rate - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
                line = self.disks()
                if line != last:
                    say(f"    wrote {self.summary.written_bytes / 2**20:6.1f} MiB   {line}")
                    last = line
                read_only = [b for b in self.bookies() if b.get("state") == "ReadOnly"]
                if read_only:
                    self.summary.read_only_bookie = read_only[0]["pod"]
                    say(f"   the operator set {read_only[0]['pod']} read-only: {read_only[0].get('readOnlyReason')}")
            for handle in handles:
                await handle.close()
        return kept, dropped

    async def delete(self, zk: str, root: str, ledger_ids: list[int]) -> None:
        from bookie.client import BookKeeper, ClientConfig

        async with BookKeeper(ClientConfig(zk_servers=zk, ledgers_root=root)) as bk:
            for ledger_id in ledger_ids:
                await bk.delete_ledger(ledger_id)

    def reclaim(self) -> None:
        def writable_again() -> bool:
            status = self.bookie_cluster().get("status", {})
            comp = status.get("compaction", {})
            done = comp.get("lastCompletionTime", "") > comp.get("lastScheduleTime", "~") or (
                comp.get("lastCompletionTime") and "run" not in comp)
            target: dict[str, Any] = next(
                (b for b in status.get("bookies", []) if b["pod"] == self.summary.read_only_bookie), {})
            return bool(done and target.get("state") == "Writable")

        wait_until(writable_again, 420, f"{self.summary.read_only_bookie} writable again after compaction",
                   interval=2, progress=lambda: f"{self.disks()}   compaction: "
                   f"{self.bookie_cluster().get('status', {}).get('compaction', {}).get('run') or 'next run soon'}")
        self.summary.used_after_bytes = self.used_bytes()
        self.summary.writable_again = True
        say(f"   reclaimed {self.summary.reclaimed_bytes / 2**20:.1f} MiB; {self.disks()}")

    def audit(self, zk: str, root: str) -> Path:
        snapshot, out = self.workdir / "audit" / "snapshot", self.workdir / "audit" / "report"
        audit = [sys.executable, "-m", "bookie_audit.cli"]
        subprocess.run([*audit, "snapshot", "--zk", zk, "--root", root, "--out", str(snapshot)], check=True,
                       capture_output=True, text=True)
        logs = [arg for pod, path in self.ledger_paths().items()
                for arg in ("--logs", f"{pod}={path}")]
        result = subprocess.run([*audit, "run", *logs, "--metadata", str(snapshot), "--out", str(out)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise StoryFailed(f"bookie-audit run failed: {result.stderr.strip()[-2000:]}")
        report = out / REPORT_NAME
        if not report.exists():
            raise StoryFailed(f"the audit wrote no report in {out}")
        say(f"   {result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ''}")
        return report

    # ------------------------------------------------------------------------------------ teardown
    def close(self) -> None:
        if self._zk is not None:
            self._zk.stop()
        self.cluster.down()
        for path in self.mounts:
            subprocess.run(["umount", "-l", str(path)], check=False)
        self.mounts.clear()


def operator_image_values() -> list[str]:
    """Helm values for the operator's image: the chart's own (built by the bootstrap into $BOOKIE_FLEET_IMAGES)."""
    return []


def print_table(summary: Summary) -> None:
    say("\n== what happened")
    width = max(len(s["step"]) for s in summary.steps)
    for s in summary.steps:
        say(f"  {s['step']:<{width}}  {s['seconds']:>6.1f}s")
    say(f"\n  written: {summary.written_bytes / 2**20:.1f} MiB; read-only: {summary.read_only_bookie}; "
        f"reclaimed: {summary.reclaimed_bytes / 2**20:.1f} MiB "
        f"({summary.used_before_bytes / 2**20:.1f} -> {summary.used_after_bytes / 2**20:.1f} MiB on the ledger disks)"
        f"; writable again: {'yes' if summary.writable_again else 'no'}")
    say(f"  audit report: {summary.report}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_story(workdir: Path, short: bool, keep_running: bool) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    say(f"bookie-fleet playground (Kubernetes) in {workdir}")
    story = Story(workdir, Sizes.short() if short else Sizes(), keep_running)
    # Ctrl-C and SIGTERM both end in the finally block below, which tears everything down.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = story.run()
        (workdir / "summary.json").write_text(json.dumps({**asdict(summary),
                                                          "reclaimed_bytes": summary.reclaimed_bytes}, indent=1))
        print_table(summary)
        if keep_running:
            say("\nfleet running (kubectl: KUBECONFIG=" f"{story.cluster.admin_kubeconfig}); Ctrl-C stops it")
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
        return 0
    except StoryFailed as exc:
        print(f"playground failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        story.close()
        say("everything stopped")
