"""The operator as an OLM bundle (registry+v1), built from the Helm chart so that the two never disagree:

    python -m bookie_operator.olm_bundle OUTDIR      # OUTDIR/manifests/*.yaml and OUTDIR/metadata/annotations.yaml

The chart is rendered by ``helm template`` with the values OLM needs (CRDs installed by OLM, not by the operator:
``crds.manage=false``; every namespace: ``clusterWide=true``; leader election on) and turned into a
ClusterServiceVersion: the chart's Deployment as the install strategy, its ClusterRole's rules as
``clusterPermissions`` and its Role's as ``permissions`` of the operator's ServiceAccount. The CRD is the
checked-in one (generated from ``models``), the examples are the chart's Artifact Hub examples
(``chart_values``), and the objects a CSV cannot hold but a bundle can (the audit ClusterRole the operator binds
for its Spark pods, the metrics Service, the PodDisruptionBudget) go beside it.

OLM installs the Deployment in the namespace the user subscribes in; the chart's pod reads its namespace from
the downward API, so the same template is right under Helm and OLM. The operator watches every namespace (the
chart's opt-in, not its default), so the bundle supports the AllNamespaces install mode only (OLM's
target-namespace annotation is not read).
tests/operator/test_operator_olm_bundle.py validates the result with operator-framework's own validators.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from bookie_operator import chart_values, models

Obj = dict[str, Any]
REPO = chart_values.REPO
CRD_FILE = REPO / "crds" / "bookieclusters.yaml"
PACKAGE = "bookie-operator"
CHANNEL = "candidate"         # OLM's channel naming: candidate, fast, stable
ICON = REPO / "deploy" / "olm" / "icon.svg"
RELEASE = PACKAGE            # the release name: object names without a prefix (the chart's fullname rule)
# The highest level of the Operator Capability Model whose lines all hold, bar one stated gap (docs/operator.md,
# "Capability level"): Basic Install, Seamless Upgrades, Full Lifecycle.
CAPABILITY = "Full Lifecycle"
# Objects a bundle may carry beside the CSV (OLM's supported kinds) that the chart renders.
BESIDE_CSV = ("ClusterRole", "Service", "PodDisruptionBudget")


def render_chart(helm: str, namespace: str = "bookie-operator") -> list[Obj]:
    """The chart's objects as OLM would install them (values: CRDs left to OLM, every namespace watched)."""
    run = subprocess.run([helm, "template", RELEASE, str(chart_values.CHART), "--namespace", namespace,
                          "--set", "crds.manage=false", "--set", "clusterWide=true", "--skip-crds"],
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise RuntimeError(f"helm template {chart_values.CHART} failed: {run.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


def _one(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(found) != 1:
        raise ValueError(f"the chart renders {len(found)} {kind} named {name!r}, expected one")
    return found[0]


def _bare(obj: Obj) -> Obj:
    """An object without the release's namespace and Helm's labels (OLM sets its own)."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("namespace",)}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in ("helm.sh/chart",
                                                                                 "app.kubernetes.io/managed-by")}
    return {**obj, "metadata": {**meta, "labels": labels}}


def cluster_service_version(objects: list[Obj], version: str) -> Obj:
    deployment = _one(objects, "Deployment", PACKAGE)
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    cluster_role = _one(objects, "ClusterRole", f"{PACKAGE}-kopf")
    role = _one(objects, "Role", f"{PACKAGE}-leader-election")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    description = (
        "Runs BookKeeper bookies (ours or Apache BookKeeper's) as BookieClusters: read-only control from disk "
        "usage, scheduled compaction inside a window, safe decommission, online volume growth, zones as racks, "
        "TLS, and a storage audit that says which ledgers and topics keep each entry log on disk.")
    return {
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"{PACKAGE}.v{version}",
            "annotations": {
                "alm-examples": json.dumps(chart_values.crd_examples(), indent=2),
                "capabilities": CAPABILITY,
                "categories": "Storage,Streaming & Messaging",
                "containerImage": image,
                "description": description.split(":")[0],
                "operatorframework.io/suggested-namespace": "bookie-fleet",
                "operators.operatorframework.io/infrastructure-features": '["disconnected"]',
            },
        },
        "spec": {
            "displayName": "Bookie Fleet",
            "description": description,
            "version": version,
            "maturity": "alpha",
            "icon": [{"base64data": base64.b64encode(ICON.read_bytes()).decode(), "mediatype": "image/svg+xml"}],
            "minKubeVersion": "1.30.0",
            "keywords": ["bookkeeper", "bookie", "pulsar", "storage", "garbage collection"],
            "provider": {"name": "bookie-fleet"},
            "maintainers": [{"name": "bookie-fleet maintainers", "email": "maintainers@bookie-fleet.dev"}],
            "links": [{"name": "Apache BookKeeper", "url": "https://bookkeeper.apache.org/"}],
            "installModes": [{"type": t, "supported": t == "AllNamespaces"}
                             for t in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")],
            "install": {"strategy": "deployment", "spec": {
                "deployments": [{"name": deployment["metadata"]["name"],
                                 "label": deployment["metadata"].get("labels", {}),
                                 "spec": deployment["spec"]}],
                "clusterPermissions": [{"serviceAccountName": account, "rules": cluster_role["rules"]}],
                "permissions": [{"serviceAccountName": account, "rules": role["rules"]}],
            }},
            "customresourcedefinitions": {"owned": [{
                "name": f"{models.PLURAL}.{models.GROUP}", "version": models.VERSION, "kind": models.KIND,
                "displayName": models.KIND, "description": chart_values.CRD_DESCRIPTION,
                "resources": [{"kind": k, "version": "v1", "name": ""} for k in
                              ("StatefulSet", "Service", "ConfigMap", "Secret", "PodDisruptionBudget",
                               "NetworkPolicy", "PersistentVolumeClaim")],
            }]},
        },
    }


def bundle(objects: list[Obj], crd: Obj, version: str) -> dict[str, Obj]:
    """Bundle-relative path -> object."""
    files = {f"manifests/{PACKAGE}.clusterserviceversion.yaml": cluster_service_version(objects, version),
             f"manifests/{models.GROUP}_{models.PLURAL}.yaml": crd}
    for obj in objects:
        if obj["kind"] in BESIDE_CSV and obj["metadata"]["name"] != f"{PACKAGE}-kopf":
            files[f"manifests/{obj['metadata']['name']}_{obj['kind'].lower()}.yaml"] = _bare(obj)
    files["metadata/annotations.yaml"] = {"annotations": {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": PACKAGE,
        "operators.operatorframework.io.bundle.channels.v1": CHANNEL,
        "operators.operatorframework.io.bundle.channel.default.v1": CHANNEL,
    }}
    return files


def write(out: Path, helm: str) -> list[Path]:
    chart = yaml.safe_load((chart_values.CHART / "Chart.yaml").read_text())
    files = bundle(render_chart(helm), yaml.safe_load(CRD_FILE.read_text()), str(chart["appVersion"]))
    written = []
    for rel, obj in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(obj, sort_keys=False, width=120))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookie_operator.olm_bundle", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the bundle directory to write (manifests/, metadata/)")
    parser.add_argument("--helm", default=shutil.which("helm"), help="the helm binary (default: on PATH)")
    args = parser.parse_args(argv)
    if not args.helm:
        parser.error("helm is not on PATH: source the env file ./scripts/bootstrap prints, or pass --helm")
    for path in write(args.out, args.helm):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
