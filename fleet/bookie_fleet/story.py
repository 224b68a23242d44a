"""The playground's story on Kubernetes: the product doing what it exists for, live, on this machine.

A local Kubernetes control plane, a real ZooKeeper, the operator installed by its Helm chart, a
BookieCluster from examples/ with small ledger disks, and an Apache Pulsar broker storing its topics on those
bookies (``bookie_fleet.workload``). Then what users of BookKeeper live through: Pulsar's producers fill the
ledger disks; the operator turns the fullest bookie read-only; the messages of two topics expire and Pulsar
deletes their ledgers, yet the disks stay full, and the bookies say why: which topic's ledgers keep which
entry logs; the operator's scheduled compaction reclaims the space and the bookie becomes writable again;
the operator's storage audit, run on request (Spark on Kubernetes, reading the entry logs through the bookies'
admin API), writes its HTML report of that fleet, naming the topics. Each step is timed and the run
ends with a table of what happened (``summary.json`` in the work directory holds the same).

With ``--tls`` the bookie port serves only TLS clients with a certificate of role ``broker`` (or ``bookie``)
from the run's own CA, as ``examples/production.yaml`` configures it, and the broker presents one
(``PlaygroundPKI``).

Everything it starts (control plane, pods, ZooKeeper, the broker and its clients, tmpfs mounts) is stopped
at the end, on Ctrl-C, or on failure, unless ``--keep-running``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from bookie_audit.report import REPORT_NAME
from bookie_operator.audit_builders import REPORTS_PORT
from bookie_operator.builders import ADMIN_TOKEN_KEY, CLUSTER_LABEL, admin_token_secret_name
from bookie_operator.models import AUDIT_REQUEST_ANNOTATION, HTTP_PORT
from localkube.binaries import find_binary
from localkube.cluster import LocalCluster
from localkube.kapi import KubeAPI

from bookie_fleet.bookie_rest import (
    add_pinning,
    finished_logs,
    pinned_garbage,
    pinning_line,
    run_gc,
    wait_ledgers_deleted,
)
from bookie_fleet.certificates import LocalCA, roles_ou
from bookie_fleet.pulsar import BookieClientTLS
from bookie_fleet.workload import EXPIRING, KEPT, TOPICS, PulsarWorkload, topic_name
from bookie_fleet.zookeeper import ZooKeeperServer

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "bookie-operator"
EXAMPLE = REPO / "examples" / "playground.yaml"
NAMESPACE = "bookie-fleet"
CLUSTER = "playground"
GROUP, VERSION, PLURAL = "bookie-fleet.dev", "v1beta1", "bookieclusters"
AUDIT_STEP = "the operator's storage audit of the fleet (Spark on Kubernetes)"
T = TypeVar("T")


class StoryFailed(RuntimeError):
    pass


@dataclass
class Sizes:
    """How big the story is: the full one for people, a short one for CI."""

    bookies: int = 3
    disk_mb: int = 96
    message_kb: int = 32         # messages of 1 byte to this size

    @classmethod
    def short(cls) -> Sizes:
        return cls(disk_mb=48)

    @property
    def write_rate(self) -> float:
        """Bytes per second the producers send: the first disk reaches 60% in about half a minute."""
        return self.disk_mb * 2**20 / 30


@dataclass
class Summary:
    steps: list[dict[str, Any]] = field(default_factory=list)
    read_only_bookie: str | None = None
    written_bytes: int = 0
    acknowledged_messages: int = 0
    deleted_ledgers: int = 0
    # What keeps the disks full once the topics expired: per topic, the entry logs whose live ledgers are
    # all or partly its own, and the garbage (dead bytes) those logs hold; from the bookies' explain endpoint.
    pinning: dict[str, dict[str, int]] = field(default_factory=dict)
    # bookie_pinned_garbage_bytes as the bookies exported it then: pod, ledger, topic, bytes.
    pinned_garbage: list[dict[str, Any]] = field(default_factory=list)
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


# With --tls: the roles the bookie port admits, as examples/production.yaml (the broker, and the bookies' own
# clients for re-replication).
AUTHORIZED_ROLES = ["broker", "bookie"]
TLS_SECRET = f"{CLUSTER}-bookie-tls"


@dataclass(frozen=True)
class PlaygroundPKI:
    """A CA of the run, the bookies' certificate (every bookie id's host, role ``bookie``) as a Secret in
    cert-manager's layout labelled as the cluster's own (the operator refuses a Secret that is not), and the
    broker's client certificate (role ``broker``)."""

    secret: dict[str, Any]
    broker: BookieClientTLS

    @classmethod
    def create(cls, directory: Path) -> PlaygroundPKI:
        ca = LocalCA(directory, "bookie-fleet playground CA")
        bookie = ca.issue("bookie", "bookie", ou=roles_ou(["bookie"]),
                          dns_names=(f"*.{CLUSTER}-headless.{NAMESPACE}.svc.cluster.local",))
        data = {"tls.crt": bookie.certificate, "tls.key": bookie.key, "ca.crt": bookie.ca}
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": TLS_SECRET, "namespace": NAMESPACE, "labels": {CLUSTER_LABEL: CLUSTER}},
                  "data": {k: base64.b64encode(v.read_bytes()).decode() for k, v in data.items()}}
        broker = ca.issue("broker", "pulsar-broker", ou=roles_ou(["broker"]))
        return cls(secret, BookieClientTLS.of(broker))


def require_client_certificates(manifest: dict[str, Any]) -> dict[str, Any]:
    """The BookieCluster with TLS on the bookie port from ``TLS_SECRET``, client certificates required and only
    ``AUTHORIZED_ROLES`` admitted."""
    spec = {**manifest["spec"], "tls": {"bookie": {"secretName": TLS_SECRET}, "clientAuthentication": True,
                                        "authorizedRoles": list(AUTHORIZED_ROLES)}}
    return {**manifest, "spec": spec}


class Story:
    def __init__(self, workdir: Path, sizes: Sizes, keep_running: bool = False, tls: bool = False) -> None:
        self.workdir = workdir
        self.sizes = sizes
        self.keep_running = keep_running
        self.pki = PlaygroundPKI.create(workdir / "pki") if tls else None
        self.summary = Summary()
        self.cluster = LocalCluster(workdir / "kube", ephemeral_ports=True)
        self._zk: ZooKeeperServer | None = None   # once the cluster is up: it listens where pods reach it
        self.mounts: list[Path] = []
        self.api: KubeAPI | None = None
        self.workload: PulsarWorkload | None = None

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

    def admin_urls(self) -> dict[str, str]:
        """Each bookie pod's admin REST API (pods have addresses of their own on this machine)."""
        out = {}
        for pod in sorted(self.ledger_paths()):
            obj = self.kube().get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}") or {}
            ip = obj.get("status", {}).get("podIP")
            if ip:
                out[pod] = f"http://{ip}:{HTTP_PORT}"
        return out

    def admin_token(self) -> str:
        """The bookies' admin token, from the Secret the operator made for the cluster (GC triggers and the
        entry-log listing need it)."""
        path = f"/api/v1/namespaces/{NAMESPACE}/secrets/{admin_token_secret_name(CLUSTER)}"
        secret = self.kube().get(path)
        if secret is None:
            raise StoryFailed(f"no admin token Secret at {path}")
        return base64.b64decode(secret["data"][ADMIN_TOKEN_KEY]).decode().strip()

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
        with self.step("an Apache Pulsar broker stores its topics on the bookies"):
            self.workload = PulsarWorkload(self.workdir / "pulsar", zk, root,
                                           bookie_tls=self.pki.broker if self.pki is not None else None)
            broker = self.workload.start()
            say(f"   broker {broker.service_url} (admin {broker.web_url}); topics "
                f"{', '.join(topic_name(t) for t in TOPICS)}")
        with self.step("Pulsar's producers fill the ledger disks until the operator makes a bookie read-only") as rec:
            self.fill()
            rec["read_only_bookie"] = self.summary.read_only_bookie
            rec["written_bytes"] = self.summary.written_bytes
        expiring = " and ".join(EXPIRING)
        with self.step(f"the messages of {expiring} expire: Pulsar deletes their ledgers") as rec:
            deleted = self.workload.expire()
            wait_ledgers_deleted(next(iter(self.admin_urls().values())), self.admin_token(), deleted, 120)
            expired_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.summary.deleted_ledgers = rec["deleted_ledgers"] = len(deleted)
            say(f"   {len(deleted)} ledgers deleted; {', '.join(KEPT)} keeps "
                f"{len(self.workload.ledgers(next(iter(KEPT))))}")
        with self.step("GC runs on every bookie, yet the disks stay full: what keeps them") as rec:
            self.explain()
            self.summary.used_before_bytes = self.used_bytes()
            rec["pinning"] = self.summary.pinning
            say(f"   ledger disks still hold {self.summary.used_before_bytes / 2**20:.1f} MiB")
        with self.step("scheduled compaction reclaims the space; the bookie becomes writable again") as rec:
            self.reclaim(expired_at)
            rec["reclaimed_bytes"] = self.summary.reclaimed_bytes
        with self.step(AUDIT_STEP) as rec:
            self.summary.report = str(self.audit())
            rec["report"] = self.summary.report
        return self.summary

    def install_operator(self) -> None:
        with contextlib.suppress(Exception):
            self.kube().create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": NAMESPACE}})
        # The chart's default scope: the operator watches the namespace it is installed in, where the cluster is.
        self.tool("helm", "install", "bookie-operator", str(CHART), "--namespace", NAMESPACE, "--wait",
                  "--timeout", "240s", *operator_image_values(), "--set", "reconcileInterval=3",
                  "--set", "logFormat=plain")
        say("   operator pod Ready")

    def manifest(self) -> dict[str, Any]:
        manifest = yaml.safe_load(EXAMPLE.read_text())
        spec = manifest["spec"]
        spec["metadataService"]["zkServers"] = self.zk.connect_string
        spec["replicas"] = self.sizes.bookies
        spec["storage"]["ledgers"]["size"] = f"{self.sizes.disk_mb}Mi"
        manifest["metadata"]["namespace"] = NAMESPACE
        return require_client_certificates(manifest) if self.pki is not None else dict(manifest)

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
        if self.pki is not None:
            self.kube().create(f"/api/v1/namespaces/{NAMESPACE}/secrets", self.pki.secret)
            say(f"   bookie port: TLS only, client certificates of role {' or '.join(AUTHORIZED_ROLES)} "
                f"(Secret {TLS_SECRET}); the broker presents a {AUTHORIZED_ROLES[0]} certificate")
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

    def fill(self) -> None:
        assert self.workload is not None
        self.workload.produce(self.sizes.write_rate, self.sizes.message_kb * 1024)
        started, last = time.monotonic(), ""
        while self.summary.read_only_bookie is None:
            if time.monotonic() - started > 600:
                raise StoryFailed("no bookie went read-only within 10 minutes of writing")
            time.sleep(1)
            self.summary.written_bytes = self.workload.written_bytes()
            line = self.disks()
            if line != last:
                say(f"    Pulsar received {self.summary.written_bytes / 2**20:6.1f} MiB   {line}")
                last = line
            read_only = [b for b in self.bookies() if b.get("state") == "ReadOnly"]
            if read_only:
                self.summary.read_only_bookie = read_only[0]["pod"]
                say(f"   the operator set {read_only[0]['pod']} read-only: {read_only[0].get('readOnlyReason')}")
        # Pulsar goes on writing to the two other bookies until its producers stop.
        self.summary.acknowledged_messages = self.workload.stop_producing()
        self.summary.written_bytes = self.workload.written_bytes()
        say(f"   producers stopped: {self.summary.acknowledged_messages} messages acknowledged, "
            f"{self.summary.written_bytes / 2**20:.1f} MiB")

    def explain(self) -> None:
        """A GC cycle on every bookie (what gcWaitTime brings on schedule; no compaction), then what each
        bookie says keeps its entry logs: the explain endpoint, and the pinned-garbage gauge."""
        urls, token = self.admin_urls(), self.admin_token()
        run_gc(urls, token, 120)
        for pod, url in urls.items():
            logs = finished_logs(url, token)
            add_pinning(self.summary.pinning, logs)
            size = sum(log["sizeBytes"] for log in logs)
            live = sum(log["remainingBytes"] for log in logs)
            say(f"   {pod}: {len(logs)} entry logs of {size / 2**20:.1f} MiB hold {live / 2**20:.1f} MiB of live "
                f"entries; {pinning_line(logs)}")
        self.summary.pinned_garbage = wait_until(lambda: pinned_garbage(urls), 30,
                                                 "bookie_pinned_garbage_bytes with the topics named")
        for g in self.summary.pinned_garbage[:3]:
            say(f"   bookie_pinned_garbage_bytes{{ledger=\"{g['ledger']}\",topic=\"{g['topic']}\"}} "
                f"{g['bytes'] / 2**20:.1f} MiB on {g['pod']}")

    def compaction_line(self) -> str:
        run = self.bookie_cluster().get("status", {}).get("compaction", {}).get("run")
        if not run:
            return "next run soon"
        done, pending, active = run.get("done", []), run.get("pending", []), run.get("active")
        now = f"{CLUSTER}-{active} compacting, " if active is not None else ""
        return (f"run of {run.get('scheduledFor')}: {now}"
                f"{len(done)} of {len(done) + len(pending) + (active is not None)} bookies done")

    def reclaim(self, after: str) -> None:
        """Waits until a scheduled compaction run that fired once the ledgers were gone (``after``, UTC) has
        completed and every bookie is writable (the operator may have swapped which bookie is read-only in
        between: it keeps ensembleSize bookies writable)."""
        def writable_again() -> bool:
            status = self.bookie_cluster().get("status", {})
            comp = status.get("compaction", {})
            scheduled = comp.get("lastScheduleTime", "")
            done = scheduled >= after and "run" not in comp and comp.get("lastCompletionTime", "") >= scheduled
            bookies = status.get("bookies", [])
            return bool(done and bookies and all(b.get("state") == "Writable" for b in bookies))

        wait_until(writable_again, 420, "every bookie writable again after a compaction run",
                   interval=2, progress=lambda: f"{self.disks()}   compaction: {self.compaction_line()}")
        self.summary.used_after_bytes = self.used_bytes()
        self.summary.writable_again = True
        say(f"   reclaimed {self.summary.reclaimed_bytes / 2**20:.1f} MiB; {self.disks()}")

    def audit(self) -> Path:
        """The operator's storage audit, as a user sets it up (``spec.audit``, a nightly schedule) and asks for a
        run now (the audit-request annotation): Spark on this Kubernetes, its executors reading every bookie's
        entry logs through the admin API, the summary in status and the HTML report in the report store, fetched
        from there into the work directory."""
        # One small executor: the story's disks are megabytes, so C1 alone compiles what the short job runs (a
        # fleet-sized audit leaves the JIT at Spark's defaults). Every log counts as old: the fleet is minutes old.
        audit = {"schedule": "0 3 * * *", "mode": "full", "executors": 1,
                 "executorMemory": "512m", "driverMemory": "512m", "minAgeDays": 0,
                 "jvmOptions": ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]}
        request = f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H:%M:%SZ}"
        self.kube().merge_patch(f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/{PLURAL}/{CLUSTER}",
                                {"metadata": {"annotations": {AUDIT_REQUEST_ANNOTATION: request}},
                                 "spec": {"audit": audit}})
        say(f"   spec.audit set (nightly at 03:00 UTC) and a run requested now ({AUDIT_REQUEST_ANNOTATION})")

        def finished() -> dict[str, Any] | None:
            last = self.bookie_cluster().get("status", {}).get("audit", {}).get("lastRun")
            return last if last and last.get("request") == request else None

        last = wait_until(finished, 900, "the operator's audit run to finish", interval=2,
                          progress=self.audit_line)
        status = self.bookie_cluster()["status"]["audit"]
        if last["phase"] != "Succeeded":
            raise StoryFailed(f"audit run {last['id']} {last['phase']}: {last.get('message')}")
        for line in status.get("summary", {}).get("findings", [])[:6]:
            say(f"   {line}")
        return self.fetch_report(last["id"])

    def audit_line(self) -> str:
        run = self.bookie_cluster().get("status", {}).get("audit", {}).get("run")
        if not run:
            return "waiting for the operator to start the run"
        pods = self.kube().get(f"/api/v1/namespaces/{NAMESPACE}/pods") or {}
        spark = sorted(f"{p['metadata']['name']} {p.get('status', {}).get('phase', '?')}"
                       for p in pods.get("items", []) if p["metadata"]["name"].startswith(run["id"]))
        return f"run {run['id']}: " + (", ".join(spark) or "submitting")

    def fetch_report(self, run_id: str) -> Path:
        pods = self.kube().get(f"/api/v1/namespaces/{NAMESPACE}/pods", labelSelector=(
            f"app.kubernetes.io/component=reports,app.kubernetes.io/instance={CLUSTER}")) or {}
        ips = [p["status"]["podIP"] for p in pods.get("items", []) if p.get("status", {}).get("podIP")]
        if not ips:
            raise StoryFailed("the audit's report store has no running pod")
        out = self.workdir / "audit" / run_id
        out.mkdir(parents=True, exist_ok=True)
        url = f"http://{ips[0]}:{REPORTS_PORT}/runs/{run_id}/{REPORT_NAME}"
        with urllib.request.urlopen(url, timeout=30) as response:
            (out / REPORT_NAME).write_bytes(response.read())
        return out / REPORT_NAME

    # ------------------------------------------------------------------------------------ teardown
    def close(self) -> None:
        if self.workload is not None:
            self.workload.close()
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
    say(f"\n  Pulsar: {summary.acknowledged_messages} messages acknowledged, {summary.deleted_ledgers} ledgers "
        "deleted by expiry; what kept the disks full then: " + "; ".join(
            f"{topic} {v['logs']} logs, {v['garbage_bytes'] / 2**20:.1f} MiB of garbage"
            for topic, v in sorted(summary.pinning.items(), key=lambda kv: -kv[1]["garbage_bytes"])[:2]))
    say(f"  written: {summary.written_bytes / 2**20:.1f} MiB; read-only: {summary.read_only_bookie}; "
        f"reclaimed: {summary.reclaimed_bytes / 2**20:.1f} MiB "
        f"({summary.used_before_bytes / 2**20:.1f} -> {summary.used_after_bytes / 2**20:.1f} MiB on the ledger disks)"
        f"; writable again: {'yes' if summary.writable_again else 'no'}")
    say(f"  audit report: {summary.report}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_story(workdir: Path, short: bool, keep_running: bool, tls: bool = False) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    say(f"bookie-fleet playground (Kubernetes) in {workdir}")
    story = Story(workdir, Sizes.short() if short else Sizes(), keep_running, tls)
    # Ctrl-C and SIGTERM both end in the finally block below, which tears everything down.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = story.run()
        (workdir / "summary.json").write_text(json.dumps({**asdict(summary),
                                                          "reclaimed_bytes": summary.reclaimed_bytes}, indent=1))
        print_table(summary)
        if keep_running:
            broker = story.workload.broker if story.workload is not None else None
            say(f"\nfleet running (kubectl: KUBECONFIG={story.cluster.admin_kubeconfig}"
                + (f"; Pulsar {broker.service_url}, admin {broker.web_url}" if broker is not None else "")
                + "); Ctrl-C stops it")
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
        return 0
    except (StoryFailed, TimeoutError, RuntimeError) as exc:  # a step, or a component that would not start
        print(f"playground failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        story.close()
        say("everything stopped")
