"""The Go tools built after the local Kubernetes control plane (etcd; kube-router and cyclonus) compile against
the very packages the control plane's build compiled: Go's build cache holds one compiled client-go, gRPC and
OpenTelemetry for all of them, because every module they share with hack/kube is at hack/kube's version or
newer (scripts/align-go-modules). Asked of the real Go toolchain and the build cache the bootstrap filled, with
the build flags of every Go tool here (scripts/bootstrap.d/lib/go.sh); nothing is downloaded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.bootstrap_part("netpolicy")


REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack"
CONTROL_PLANE_TARGETS = ("./cmd/kube-apiserver", "./cmd/kube-controller-manager", "./cmd/kube-proxy",
                         "./cmd/kubectl", "helm.sh/helm/v3/cmd/helm")
TOOLS = {
    "etcd": (".",),
    "netpolicy": ("github.com/cloudnativelabs/kube-router/v2/cmd/kube-router",
                  "github.com/mattfenwick/cyclonus/cmd/cyclonus"),
}
# Packages each tool must share with the control plane, compiled once: the heavy ones it imports.
MUST_SHARE = {
    "etcd": ("google.golang.org/grpc", "go.opentelemetry.io/otel/sdk/trace", "google.golang.org/protobuf/proto",
             "github.com/prometheus/client_golang/prometheus"),
    "netpolicy": ("k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/api/core/v1",
                  "k8s.io/apimachinery/pkg/runtime", "google.golang.org/grpc"),
}


def _go_env() -> dict[str, str]:
    flags = subprocess.run(["bash", "-c", f'source "{REPO}/scripts/bootstrap.d/lib/go.sh"; echo "$go_build_flags"'],
                           check=True, capture_output=True, text=True).stdout.strip()
    return {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": f"{flags} -mod=readonly", "GOPROXY": "off"}


def _compiled(module: Path, targets: tuple[str, ...]) -> dict[str, str]:
    """Each package of the build and the file of its compiled form in Go's build cache."""
    out = subprocess.run(["go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", *targets],
                         cwd=module, env=_go_env(), check=True, capture_output=True, text=True, timeout=600).stdout
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


@pytest.fixture(scope="module")
def control_plane() -> dict[str, str]:
    return _compiled(HACK / "kube", CONTROL_PLANE_TARGETS)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_the_tools_heavy_packages_are_the_control_planes_compiled_ones(tool: str,
                                                                        control_plane: dict[str, str]) -> None:
    compiled = _compiled(HACK / tool, TOOLS[tool])
    shared = {p for p in compiled if p in control_plane and compiled[p] == control_plane[p]}
    for package in MUST_SHARE[tool]:
        assert package in compiled, f"{tool} no longer imports {package}: update MUST_SHARE"
        assert package in shared, f"{tool} compiles its own {package} (scripts/align-go-modules says why)"
    non_standard = [p for p in compiled if "." in p.split("/")[0] and p in control_plane]
    reused = [p for p in non_standard if p in shared]
    print(f"{tool}: {len(reused)} of the {len(non_standard)} packages it shares with the control plane reused")
    # Not all of them: a module the tool needs newer than the control plane's is compiled again, with every package
    # above it (kube-router needs a newer go-openapi/jsonreference, under client-go's apply configurations: 82%).
    assert len(reused) >= 0.75 * len(non_standard), sorted(set(non_standard) - shared)[:20]


def test_no_tool_module_is_behind_the_control_plane() -> None:
    done = subprocess.run([str(REPO / "scripts" / "align-go-modules"), "--check"], env=_go_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
