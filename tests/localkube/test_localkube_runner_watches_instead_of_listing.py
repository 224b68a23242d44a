"""The pod runner keeps what its node loop reads (pods, nodes, claims, volumes, storage classes) current through
watches, as a kubelet's informers do, instead of listing them from the API server on every pass: an idle node
lists nothing, and a cache follows creates, changes and deletes across the ends of its watches with one list."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from localkube.kapi import KubeAPI
from localkube.runner.cache import ObjectCache

from tests.support.kube import KubeTarget, wait_for

Obj = dict[str, Any]


def list_requests(kube: KubeTarget, resource: str) -> int:
    """LIST requests of ``resource`` the API server has answered since it started (its own counter)."""
    metrics = kube.kubectl("get", "--raw", "/metrics").stdout
    pattern = re.compile(r'^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$', re.M)
    return sum(int(float(value)) for labels, value in pattern.findall(metrics)
               if f'resource="{resource}"' in labels and 'verb="LIST"' in labels)


def test_an_idle_node_lists_nothing(kube: KubeTarget) -> None:
    # Only the runner reads these collections without a watch; it used to list both every 2 s at least.
    before = {r: list_requests(kube, r) for r in ("persistentvolumes", "storageclasses")}
    time.sleep(12)
    after = {r: list_requests(kube, r) for r in ("persistentvolumes", "storageclasses")}
    assert all(after[r] - before[r] <= 1 for r in before), (before, after)


class CountingAPI(KubeAPI):
    """The admin client, counting its plain requests (a cache's lists; its watches go round ``request``)."""

    lists = 0

    def request(self, method: str, path: str, body: Obj | list[Any] | None = None, *,
                params: dict[str, Any] | None = None, content_type: str = "application/json",
                timeout: float = 30.0) -> Obj:
        if method == "GET":
            self.lists += 1
        return super().request(method, path, body, params=params, content_type=content_type, timeout=timeout)


@pytest.fixture
def config_maps(kube: KubeTarget, kube_namespace: str) -> Iterator[tuple[ObjectCache, CountingAPI]]:
    api = CountingAPI.from_kubeconfig(kube.kubeconfig)
    assert isinstance(api, CountingAPI)
    cache = ObjectCache(api, f"/api/v1/namespaces/{kube_namespace}/configmaps", "ConfigMap", watch_seconds=2)
    stopping = threading.Event()
    thread = threading.Thread(target=cache.run, args=(stopping,), daemon=True)
    thread.start()
    try:
        assert cache.synced.wait(30)
        yield cache, api
    finally:
        stopping.set()
        thread.join(10)  # the watch in progress ends within its 2 s
        assert not thread.is_alive()


def test_a_cache_follows_creates_changes_and_deletes_across_its_watches(
        kube: KubeTarget, kube_namespace: str, config_maps: tuple[ObjectCache, CountingAPI]) -> None:
    cache, api = config_maps
    name = f"cm-{uuid.uuid4().hex[:6]}"
    path = f"/api/v1/namespaces/{kube_namespace}/configmaps"
    kube.api.create(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": "1"}})
    seen = wait_for(lambda: cache.get(kube_namespace, name), what="the created ConfigMap in the cache")
    assert seen["data"] == {"v": "1"} and seen["kind"] == "ConfigMap"
    time.sleep(5)  # more than two watches end meanwhile; each resumes from the last version seen
    kube.api.merge_patch(f"{path}/{name}", {"data": {"v": "2"}})
    wait_for(lambda: (cache.get(kube_namespace, name) or {}).get("data") == {"v": "2"}, what="the change")
    kube.api.delete(f"{path}/{name}")
    wait_for(lambda: cache.get(kube_namespace, name) is None, what="the deletion")
    assert api.lists == 1, "a watch that ended was resumed, not replaced by a new list"
