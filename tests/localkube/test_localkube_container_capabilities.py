"""Capabilities, no_new_privs and seccomp as the container sees them in /proc/self/status: containerd's default
set for a root container without a securityContext; nothing with drop ALL; add on top of drop; no_new_privs
only with allowPrivilegeEscalation false; seccomp filtering with RuntimeDefault."""

from __future__ import annotations

from typing import Any

from tests.support.kube import KubeTarget, wait_for

# CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD
# AUDIT_WRITE SETFCAP: bits 0-3, 5-8, 10, 13, 18, 27, 29, 31.
DEFAULT_CAPS = "00000000a80425fb"
SCRIPT = "grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status; unshare -m true 2>&1; sleep 3600"


def _pod(name: str, image: str, security: dict[str, Any] | None, pod_security: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": image, "command": ["sh", "-c", SCRIPT]}
    if security is not None:
        container["securityContext"] = security
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"securityContext": pod_security, "containers": [container]}}


def _status(kube: KubeTarget, namespace: str, name: str) -> dict[str, str]:
    def logs() -> str:
        result = kube.kubectl("-n", namespace, "logs", name, check=False)
        return result.stdout if result.returncode == 0 and "Seccomp:" in result.stdout else ""

    text = wait_for(logs, 90, what=f"{name}'s /proc/self/status")
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in fields.items()}


def test_capabilities_no_new_privs_and_seccomp(kube: KubeTarget, kube_namespace: str, shell_image: str) -> None:
    root = {"runAsUser": 0}
    kube.apply(_pod("defaults", shell_image, None, root), namespace=kube_namespace)
    kube.apply(_pod("dropped", shell_image, {
        "capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False,
        "seccompProfile": {"type": "RuntimeDefault"}}, root), namespace=kube_namespace)
    kube.apply(_pod("added", shell_image, {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}, root),
               namespace=kube_namespace)

    defaults = _status(kube, kube_namespace, "defaults")
    assert defaults["CapBnd"] == defaults["CapEff"] == DEFAULT_CAPS
    assert defaults["NoNewPrivs"] == "0" and defaults["Seccomp"] == "0"   # the kubelet's defaults

    dropped = _status(kube, kube_namespace, "dropped")
    assert dropped["CapBnd"] == dropped["CapEff"] == dropped["CapPrm"] == "0000000000000000"
    assert dropped["NoNewPrivs"] == "1" and dropped["Seccomp"] == "2"
    assert "unshare: unshare(0x20000): Operation not permitted" in kube.kubectl(
        "-n", kube_namespace, "logs", "dropped").stdout

    added = _status(kube, kube_namespace, "added")
    assert added["CapBnd"] == added["CapEff"] == f"{1 << 10:016x}"   # CAP_NET_BIND_SERVICE only
