"""The examples' tests use the operator tests' fixtures: the CRD installed, the operator run as a process."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator.builders import CLUSTER_LABEL

from tests.examples.cert_manager import Made, made_for, tls_secret_names
from tests.operator.conftest import JAVA, bookie_crd, operator_factory, zookeeper  # noqa: F401  (fixtures)
from tests.support.kube import KubeTarget

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# examples/<example>-certificates.yaml: the cert-manager objects that make the Secrets of <example>'s spec.tls.
CERTIFICATES = "-certificates"

# The playground's example needs the small ledger disks the playground makes (storage class
# playground-small): it reaches Ready in tests/fleet/test_playground_kubernetes_story.py.
NEEDS_PLAYGROUND_DISKS = {"playground"}


def example_paths(*, standalone: bool = False) -> list[Path]:
    """Every example BookieCluster; ``standalone``: those that reach Ready on any cluster with a default storage
    class."""
    paths = sorted(p for p in EXAMPLES.glob("*.yaml") if not p.stem.endswith(CERTIFICATES)
                   and not (standalone and p.stem in NEEDS_PLAYGROUND_DISKS))
    assert paths, f"no examples in {EXAMPLES}"
    return paths


def certificates_paths() -> list[Path]:
    return sorted(EXAMPLES.glob(f"*{CERTIFICATES}.yaml"))


def load(path: Path) -> dict[str, Any]:
    obj = yaml.safe_load(path.read_text())
    assert isinstance(obj, dict), f"{path.name} is not one YAML object"
    return obj


@dataclass
class Deployed:
    obj: dict[str, Any]                                     # the BookieCluster as applied
    made: dict[str, Made] = field(default_factory=dict)     # Secret name -> what cert-manager would make


def deploy_example(kube: KubeTarget, namespace: str, zk: ZooKeeperServer, path: Path) -> Deployed:
    """The example applied with kubectl, changing only what depends on this machine: ZooKeeper's address (and a
    ledgers root of the test's own), for Apache BookKeeper bookies the Java bookie image the local pod runner runs
    (tests/operator/conftest.py's JAVA), and for spec.tls the namespace its certificates name. What the header
    says to create first is created first: a metrics token Secret it names, and spec.tls's Secrets as
    cert-manager makes them from the example's certificates file (tests/examples/cert_manager.py)."""
    obj = load(path)
    spec = obj["spec"]
    spec["metadataService"] = {"zkServers": zk.connect_string, "ledgersRoot": f"/{namespace}/ledgers"}
    if spec.get("implementation") == "apache-bookkeeper":
        spec["image"] = JAVA["image"]
    metrics_token = spec.get("adminApi", {}).get("metricsTokenSecretName")
    if metrics_token:   # created, then labelled as the cluster's own, as the header says
        kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": metrics_token},
                    "stringData": {"token": secrets.token_urlsafe(32)}}, namespace=namespace)
        kube.kubectl("-n", namespace, "label", "secret", metrics_token,
                     f"{CLUSTER_LABEL}={obj['metadata']['name']}")
    deployed = Deployed(obj)
    if spec.get("tls"):
        deployed.made = made_for(path, spec["tls"], namespace)
        kube.apply([deployed.made[name].secret() for name in tls_secret_names(spec["tls"]).values()],
                   namespace=namespace)
    kube.apply(obj, namespace=namespace)
    return deployed
