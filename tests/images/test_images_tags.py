"""The image tags the product names agree with what the bootstrap builds: the CRD's default bookie image, the
Helm chart's operator image (its appVersion) and the project's version are one tag."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from tests.support import oci

REPO = Path(__file__).resolve().parents[2]


def test_crd_default_helm_app_version_and_project_version_are_one_tag() -> None:
    refs = oci.product_refs()
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((REPO / "helm" / "bookie-operator" / "Chart.yaml").read_text())
    values = yaml.safe_load((REPO / "helm" / "bookie-operator" / "values.yaml").read_text())
    assert refs["bookie"] == f"bookie-fleet/bookie:{version}"
    assert f"{values['image']['repository']}:{chart['appVersion']}" == refs["operator"]
    crd = (REPO / "crds" / "bookieclusters.yaml").read_text()
    assert f"default: {refs['bookie']}" in crd
