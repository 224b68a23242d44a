"""The operator writes the Secret of token hashes only as it read it, by server-side apply carrying the
resourceVersion it read: on a real API server such an apply is refused (409) once someone replaced the Secret, and
accepted while it is the one read. The fake API server of the reconcile's specifications behaves the same way."""

from __future__ import annotations

import base64

import pytest
from bookie_operator.kube import Kube, KubeError

from tests.support.kube import KubeTarget


def _secret(ns: str, value: str, version: str | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": "bk-token-hashes", "namespace": ns}
    if version is not None:
        meta["resourceVersion"] = version
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"admin": value}}


async def test_an_apply_carrying_a_stale_resource_version_is_refused(kube: KubeTarget, kube_namespace: str) -> None:
    client = await Kube.connect(str(kube.kubeconfig))
    try:
        read = await client.create(_secret(kube_namespace, "the-operators"))
        assert read is not None
        version = read["metadata"]["resourceVersion"]
        await client.delete("Secret", kube_namespace, "bk-token-hashes")
        assert await client.create(_secret(kube_namespace, "someone-elses")) is not None

        with pytest.raises(KubeError) as refused:
            await client.apply(_secret(kube_namespace, "the-operators-rotated", version))
        assert refused.value.status == 409, refused.value
        live = await client.get("Secret", kube_namespace, "bk-token-hashes")
        assert live is not None and base64.b64decode(live["data"]["admin"]) == b"someone-elses"
        current = live["metadata"]["resourceVersion"]
        applied = await client.apply(_secret(kube_namespace, "the-operators-rotated", current))
        assert applied["metadata"]["resourceVersion"] != current
    finally:
        await client.close()
