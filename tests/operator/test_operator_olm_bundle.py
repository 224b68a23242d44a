"""The OLM bundle built from the chart (``python -m bookie_operator.olm_bundle``) passes operator-framework's own
validators (the set `operator-sdk bundle validate --select-optional suite=operatorframework` runs) without a
warning, installs exactly what the chart installs (its Deployment, the rules of its roles, the checked-in CRD),
declares the capability level docs/operator.md argues for, and a broken bundle is refused naming the problem."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from bookie_operator import olm_bundle

pytestmark = pytest.mark.bootstrap_part("gitops")


REPO = Path(__file__).resolve().parents[2]


def validate(bundle_dir: Path) -> subprocess.CompletedProcess[str]:
    tools = os.environ.get("BOOKIE_FLEET_GITOPS_BIN")
    assert tools, "BOOKIE_FLEET_GITOPS_BIN is not set: source the env file ./scripts/bootstrap prints"
    return subprocess.run([str(Path(tools) / "olm-validate"), str(bundle_dir)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    helm = shutil.which("helm")
    assert helm, "helm is missing: ./scripts/bootstrap builds it (scripts/bootstrap.d/kube.sh)"
    out = tmp_path_factory.mktemp("bundle")
    olm_bundle.write(out, helm)
    return out


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def csv_of(bundle_dir: Path) -> dict[str, Any]:
    return load(bundle_dir / "manifests" / "bookie-operator.clusterserviceversion.yaml")


def test_the_bundle_passes_the_operator_framework_validators_without_warnings(bundle_dir: Path) -> None:
    run = validate(bundle_dir)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines() == ["bundle bookie-operator.v0.1.0 is valid"]


def test_the_bundle_installs_what_the_chart_installs(bundle_dir: Path) -> None:
    helm = shutil.which("helm")
    assert helm
    chart = olm_bundle.render_chart(helm)
    (deployment,) = [o for o in chart if o["kind"] == "Deployment"]
    strategy = csv_of(bundle_dir)["spec"]["install"]["spec"]
    assert strategy["deployments"][0]["spec"] == deployment["spec"]
    (cluster_role,) = [o for o in chart if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-kopf")]
    (role,) = [o for o in chart if o["kind"] == "Role"]
    assert strategy["clusterPermissions"][0]["rules"] == cluster_role["rules"]
    assert strategy["permissions"][0]["rules"] == role["rules"]
    # OLM owns the CRD: the operator neither applies it nor holds RBAC for it.
    assert "--no-manage-crd" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    # AllNamespaces, the one install mode: the chart's cluster-wide opt-in.
    assert "--all-namespaces" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any("customresourcedefinitions" in r["resources"] and "patch" in r["verbs"]
                   for r in cluster_role["rules"])
    assert load(bundle_dir / "manifests" / "bookie-fleet.dev_bookieclusters.yaml") == load(REPO / "crds" /
                                                                                          "bookieclusters.yaml")
    audit = load(bundle_dir / "manifests" / "bookie-operator-audit_clusterrole.yaml")
    assert f"--audit-cluster-role={audit['metadata']['name']}" in \
        deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_capability_level_is_the_one_the_docs_argue_for(bundle_dir: Path) -> None:
    level = csv_of(bundle_dir)["metadata"]["annotations"]["capabilities"]
    docs = (REPO / "docs" / "operator.md").read_text()
    assert f"Claimed level: **{level}**" in docs


def test_a_bundle_whose_csv_owns_a_crd_it_does_not_carry_is_refused(bundle_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(bundle_dir, broken)
    (broken / "manifests" / "bookie-fleet.dev_bookieclusters.yaml").unlink()
    run = validate(broken)
    assert run.returncode == 1
    assert 'owned CRD "bookie-fleet.dev/v1beta1, Kind=BookieCluster" not found' in run.stdout, run.stdout
