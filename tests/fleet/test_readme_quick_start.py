"""The README's quick start, run exactly as written (the shell block between its ``quick-start`` markers) on a
fresh local Kubernetes of its own: `cluster up` (which creates nothing the chart then collides with), the
operator installed by `helm install` into the README's namespace with the chart's defaults (it watches that
namespace only), the example ZooKeeper, the minimal BookieCluster created there reaching Ready. The cluster is
stopped and its files deleted afterwards, nothing left running."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def quick_start() -> str:
    found = re.search(r"<!-- quick-start -->\n```sh\n(.*?)```\n<!-- /quick-start -->", README.read_text(), re.S)
    assert found, "README.md has no shell block between <!-- quick-start --> and <!-- /quick-start -->"
    return found.group(1)


def test_the_example_zookeeper_runs_the_java_bookie_image_the_examples_use() -> None:
    zk_image = {doc["kind"]: doc for doc in yaml.safe_load_all((REPO / "examples" / "zookeeper" /
                                                                 "zookeeper.yaml").read_text())}
    image = zk_image["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]["image"]
    java = yaml.safe_load((REPO / "examples" / "apache-bookkeeper.yaml").read_text())["spec"]["image"]
    assert image == java


@pytest.mark.timeout(1200)
def test_the_readme_quick_start_reaches_a_ready_bookie_cluster(tmp_path: Path) -> None:
    cache = tmp_path / "cache"          # the user's cache, as far as the cluster's files go: a fresh cluster
    env = {**os.environ, "BOOKIE_FLEET_CACHE": str(cache), "HELM_CACHE_HOME": str(tmp_path / "helm-cache"),
           "HELM_CONFIG_HOME": str(tmp_path / "helm-config"), "HELM_DATA_HOME": str(tmp_path / "helm-data")}
    env.pop("KUBECONFIG", None)
    status_file = tmp_path / "status.json"
    script = "set -euo pipefail\n" + quick_start() + \
        f"kubectl get -n bookie-fleet bookiecluster minimal -o json > {status_file}\n"
    try:
        run = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=1100)
        assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-6000:]
        assert "minimal" in run.stdout
        status = json.loads(status_file.read_text())["status"]
        ready = {c["type"]: c for c in status["conditions"]}["Ready"]
        assert ready["status"] == "True" and status["readyReplicas"] == 3 and status["writableBookies"] == 3
    finally:
        down = subprocess.run([sys.executable, "-m", "bookie_fleet.cli", "cluster", "down", "--purge"], env=env,
                              capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, down.stdout + down.stderr
    leftovers = subprocess.run(["pgrep", "-f", str(cache)], capture_output=True, text=True)
    assert leftovers.stdout == "", f"processes left running: {leftovers.stdout}"
