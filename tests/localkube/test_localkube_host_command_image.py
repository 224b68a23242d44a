"""An image still mapped to a host command says so where a user looks: `kubectl describe pod` shows a
HostCommand Event naming the image, and its containerID is not a runc one."""

from __future__ import annotations

from tests.support.kube import KubeTarget, wait_for


def test_host_command_image_is_named_in_describe(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hosted"},
                "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}},
               namespace=kube_namespace)

    def described() -> str:
        text = kube.kubectl("-n", kube_namespace, "describe", "pod", "hosted").stdout
        return text if "HostCommand" in text and "localkube://" in text else ""

    text = wait_for(described, 60, what="the HostCommand Event in kubectl describe")
    assert 'image "busybox" runs as a host command' in " ".join(text.split())
    assert "runc://" not in text
