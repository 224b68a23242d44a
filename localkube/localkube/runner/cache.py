"""The runner's view of a kind of object: listed once, then kept current by a watch (what client-go calls a
reflector feeding an informer's store).

The node loop reads pods, nodes, claims, volumes and storage classes on every pass, and a pass runs on every
change it is told of (its own status updates included) or every 2 seconds. Listing each of them from the API
server every pass made the runner the API server's largest client on an idle cluster and most of its CPU in
the test suite; a watch sends each change once. Nothing here decides anything: a cache only answers "what
does the API server hold now", up to the latency of its watch, which every reader tolerates (a create the
cache has not seen yet answers 409, a delete 404).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from localkube.kapi import ApiError, KubeAPI

Obj = dict[str, Any]
log = logging.getLogger("localkube.runner")
WATCH_SECONDS = 50  # the API server ends a watch after this; the cache watches again from where it was
RETRY_SECONDS = 1.0


def object_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


class ObjectCache:
    """The objects of one collection (``/api/v1/pods``, ...), as its last list plus every watched change since.

    ``run`` lists, then watches from the list's resourceVersion; a watch that ends is resumed from the last
    version seen, and one the server refuses (410 Gone: that version was compacted away) starts over with a
    list. ``on_change`` is called after the first list and after every change (it wakes the node loop)."""

    def __init__(self, api: KubeAPI, path: str, kind: str, api_version: str = "v1",
                 on_change: Callable[[], None] = lambda: None, watch_seconds: int = WATCH_SECONDS) -> None:
        self.api = api
        self.watch_seconds = watch_seconds
        self.path = path
        self.kind = kind
        self.api_version = api_version
        self.on_change = on_change
        self.synced = threading.Event()
        self._items: dict[str, Obj] = {}
        self._lock = threading.Lock()

    def items(self) -> list[Obj]:
        """A snapshot of the objects (the objects themselves are shared: readers copy what they change)."""
        with self._lock:
            return list(self._items.values())

    def get(self, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._items.get(f"{namespace}/{name}")

    def run(self, stopping: threading.Event) -> None:
        while not stopping.is_set():
            try:
                version: str | None = self._list()
                while not stopping.is_set() and version is not None:
                    version = self._watch(version, stopping)
            except Exception as exc:  # the API server restarting, a dropped connection: list again
                log.debug("cache of %s: %s", self.path, exc)
                stopping.wait(RETRY_SECONDS)

    def _list(self) -> str:
        listing = self.api.request("GET", self.path)
        items = {object_key(obj): self._typed(obj) for obj in listing.get("items", [])}
        with self._lock:
            self._items = items
        self.synced.set()
        self.on_change()
        return str(listing["metadata"]["resourceVersion"])

    def _watch(self, version: str, stopping: threading.Event) -> str | None:
        """Apply the events of one watch from ``version``; the version to resume from, None to list again."""
        try:
            for event in self.api.watch(self.path, version, timeout_seconds=self.watch_seconds):
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":  # 410 Gone and the like: the events since ``version`` are lost
                    log.debug("cache of %s: watch error %s", self.path, obj.get("message"))
                    return None
                version = str(obj["metadata"]["resourceVersion"])
                if kind == "BOOKMARK":
                    continue
                with self._lock:
                    if kind == "DELETED":
                        self._items.pop(object_key(obj), None)
                    else:
                        self._items[object_key(obj)] = self._typed(obj)
                self.on_change()
                if stopping.is_set():
                    break
        except ApiError as exc:
            if exc.status == 410:
                return None
            raise
        return version

    def _typed(self, obj: Obj) -> Obj:
        # A list's items carry no kind (its watch's objects do): readers see the same object either way.
        obj.setdefault("kind", self.kind)
        obj.setdefault("apiVersion", self.api_version)
        return obj
