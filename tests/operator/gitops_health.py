"""A BookieCluster's health as GitOps tools read it: Argo CD through deploy/argocd's Lua check (run by Lua 5.1,
gopher-lua's language, with the libraries Argo CD gives a check) and Flux/kpt through kstatus
(sigs.k8s.io/cli-utils, built by scripts/bootstrap.d/gitops.sh from hack/gitops)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARGOCD_CHECK = REPO / "deploy" / "argocd" / "bookie-fleet.dev" / "BookieCluster" / "health.lua"
ARGOCD_DRIVER = Path(__file__).parent / "lua" / "run_health_check.lua"


def argocd_health(obj: dict[str, Any]) -> tuple[str, str]:
    """(status, message) as Argo CD's health check gives them: Healthy, Progressing, Degraded, Suspended, ..."""
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is missing: ./scripts/bootstrap installs it (scripts/bootstrap.d/lua.sh)"
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(obj, f)
        f.flush()
        run = subprocess.run([lua, str(ARGOCD_DRIVER), str(ARGOCD_CHECK), f.name], capture_output=True, text=True,
                             timeout=30)
    assert run.returncode == 0, run.stderr
    hs = json.loads(run.stdout)
    return hs["status"], hs["message"]


def kstatus(obj: dict[str, Any]) -> tuple[str, str]:
    """(status, message) as kstatus computes them: Current, InProgress, Failed, Terminating, ..."""
    tools = os.environ.get("BOOKIE_FLEET_GITOPS_BIN")
    assert tools, "BOOKIE_FLEET_GITOPS_BIN is not set: source the env file ./scripts/bootstrap prints"
    run = subprocess.run([str(Path(tools) / "kstatus")], input=json.dumps(obj), capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    return result["status"], result["message"]
