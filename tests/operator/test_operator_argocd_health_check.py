"""Argo CD reads a BookieCluster's health with deploy/argocd's Lua check: run here by Lua 5.1 (gopher-lua's
language, with the libraries Argo CD gives a check) over the statuses the operator's own decisions write in
each state: Progressing while it creates or rolls, Healthy when Ready, Degraded when a bookie cannot start or the
spec is invalid, Suspended during a decommission, and Progressing, never Healthy, for what it does not know."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from bookie_operator import decisions, models
from bookie_operator.decisions import ClusterFacts, start_failures
from bookie_operator.decisions.decommission import DecommissionFacts, decommission_step, start_decommission
from bookie_operator.models import BookieClusterStatus, DecommissionStatus

from tests.operator.crd_schema import status_errors
from tests.operator.helpers import NOW, spec

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "deploy" / "argocd" / "bookie-fleet.dev" / "BookieCluster" / "health.lua"
ARGOCD_CM = REPO / "deploy" / "argocd" / "argocd-cm.yaml"
DRIVER = Path(__file__).parent / "lua" / "run_health_check.lua"
GENERATION = 4


def health(obj: dict[str, Any], tmp_path: Path) -> tuple[str, str]:
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is missing: ./scripts/bootstrap installs it (scripts/bootstrap.d/lua.sh)"
    path = tmp_path / "object.json"
    path.write_text(json.dumps(obj))
    run = subprocess.run([lua, str(DRIVER), str(CHECK), str(path)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    hs = json.loads(run.stdout)
    return hs["status"], hs["message"]


def cluster(status: BookieClusterStatus | None) -> dict[str, Any]:
    """A BookieCluster as Argo CD reads it from the API server, with the status the operator wrote."""
    obj: dict[str, Any] = {
        "apiVersion": f"{models.GROUP}/{models.VERSION}", "kind": models.KIND,
        "metadata": {"name": "bk", "namespace": "team", "generation": GENERATION},
        "spec": {"replicas": 3, "ensembleSize": 2, "metadataService": {"zkServers": "zk:2181"}}}
    if status is not None:
        obj["status"] = status.model_dump(by_alias=True, exclude_none=True)
        assert status_errors(obj["status"]) == []       # a status the API server would store
    return obj


def facts(**overrides: Any) -> ClusterFacts:
    """A settled three-bookie cluster, changed by ``overrides``."""
    settled: dict[str, Any] = dict(desired_replicas=3, ensemble_size=2, existing=3, ready=3, writable=3,
                                   scaling=False, outdated=[], compaction_run=None, decommission=None,
                                   unregistered=[], under_replicated=0)
    return ClusterFacts(**(settled | overrides))


def written(f: ClusterFacts) -> BookieClusterStatus:
    """The status the reconcile's last step writes for these facts (reconcile/status.py's conditions)."""
    conditions: list[models.Condition] = []
    for c in decisions.cluster_conditions(f).conditions:
        conditions = decisions.set_condition(conditions, c.type, c.status, c.reason, c.message, NOW, GENERATION)
    return BookieClusterStatus(observed_generation=GENERATION, replicas=f.existing, ready_replicas=f.ready,
                               writable_bookies=f.writable, conditions=conditions, decommission=f.decommission)


def test_a_cluster_being_created_is_progressing(tmp_path: Path) -> None:
    status, message = health(cluster(written(facts(existing=1, ready=0, writable=0, scaling=True))), tmp_path)
    assert (status, message) == ("Progressing", "Reconciling: scaling to 3; 0/3 bookies ready")


def test_a_rolling_restart_is_progressing_while_ready(tmp_path: Path) -> None:
    rolling = written(facts(outdated=["bk-2"]))
    assert decisions.condition(rolling.conditions, "Ready").status == "True"  # type: ignore[union-attr]
    assert health(cluster(rolling), tmp_path) == ("Progressing", "Reconciling: rolling bk-2")


def test_a_ready_cluster_is_healthy(tmp_path: Path) -> None:
    assert health(cluster(written(facts())), tmp_path) == ("Healthy", "BookiesReady: 3 bookies ready, 3 writable")


def test_a_bookie_that_cannot_start_makes_the_cluster_degraded(tmp_path: Path) -> None:
    reason, message = start_failures.classify("DirectoryNotWritable: /bookie/ledgers-0 is read-only")
    failure = start_failures.StartFailure(2, "bk-2", reason, message, 1, 3, "2026-11-22T11:59:00Z")
    verdict = start_failures.degraded({2: failure}, "bk", spec(), "instance-1")
    assert verdict is not None
    f = facts(ready=2, writable=2, problems=[verdict.message], problem_reason=verdict.reason)
    status, text = health(cluster(written(f)), tmp_path)
    assert status == "Degraded" and text.startswith("DirectoryNotWritable: ") and "bk-2" in text


def test_an_invalid_spec_makes_the_cluster_degraded(tmp_path: Path) -> None:
    conditions = decisions.set_condition([], "Ready", False, "InvalidSpec", "spec.replicas: too few", NOW, 4)
    conditions = decisions.set_condition(conditions, "Degraded", True, "InvalidSpec", "spec.replicas: too few",
                                         NOW, 4)
    status = BookieClusterStatus(observed_generation=GENERATION, conditions=conditions)
    assert health(cluster(status), tmp_path) == ("Degraded", "InvalidSpec: spec.replicas: too few")


def _recovering() -> DecommissionStatus:
    """bk-3 past MarkingReadOnly, as the decommission state machine records it."""
    started = start_decommission(3, "bk-3", "bk-3.bk-headless.team.svc.cluster.local:3181", NOW)
    step = decommission_step(started, DecommissionFacts(read_only=True, ledgers_referencing=12, under_replicated=0,
                                                        cookie_exists=True, pod_exists=True, claims_remaining=2),
                             spec(replicas=3), NOW)
    assert step.status is not None and step.status.phase == "Recovering"
    return step.status


def test_a_decommission_in_progress_suspends_the_cluster(tmp_path: Path) -> None:
    f = facts(existing=4, ready=4, writable=3, scaling=True, decommission=_recovering())
    status, message = health(cluster(written(f)), tmp_path)
    assert status == "Suspended"
    assert message == "Decommissioning Recovering: bk-3 (bk-3.bk-headless.team.svc.cluster.local:3181)"


@pytest.mark.parametrize("status", [
    None,                                                                      # never reconciled
    BookieClusterStatus(),                                                     # no conditions yet
    BookieClusterStatus(observed_generation=GENERATION - 1, conditions=decisions.set_condition(
        [], "Ready", True, "BookiesReady", "", NOW, GENERATION - 1)),            # a new spec not yet seen
    BookieClusterStatus(observed_generation=GENERATION, conditions=decisions.set_condition(
        [], "Ready", None, "Unknown", "", NOW, GENERATION)),                   # Ready Unknown
    BookieClusterStatus(observed_generation=GENERATION, conditions=decisions.set_condition(
        [], "SomethingNew", True, "Whatever", "", NOW, GENERATION)),           # only types it does not know
], ids=["no-status", "no-conditions", "generation-not-observed", "ready-unknown", "unknown-types"])
def test_a_status_it_does_not_know_is_progressing_never_healthy(status: BookieClusterStatus | None,
                                                                tmp_path: Path) -> None:
    assert health(cluster(status), tmp_path)[0] == "Progressing"


def test_the_argocd_cm_snippet_holds_the_same_check() -> None:
    data = yaml.safe_load(ARGOCD_CM.read_text())["data"]
    assert data == {"resource.customizations.health.bookie-fleet.dev_BookieCluster": CHECK.read_text()}
