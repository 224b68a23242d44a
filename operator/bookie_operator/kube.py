"""The few Kubernetes API calls the operator makes, async (kubernetes_asyncio for config, TLS and auth).

Objects are plain dicts. Writes use server-side apply with the field manager ``bookie-operator``; status
goes through the ``/status`` subresource with a merge patch. Every request is counted in a Prometheus
counter (API requests per minute is one of the operator's benchmarks).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client as kclient
from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import kube_config

from bookie_operator import metrics, models

Obj = dict[str, Any]
FIELD_MANAGER = "bookie-operator"
JSON = "application/json"
# Asks the API server for an object's metadata alone (PartialObjectMetadata): a Secret read this way never
# brings its data to the operator.
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# Dropped from such a read on receipt: kubectl's client-side apply keeps a copy of the whole object, a Secret's data
# included, in the annotation kubectl.kubernetes.io/last-applied-configuration.
UNREAD_METADATA = ("annotations", "managedFields")

# kind -> (group/version prefix, plural)
_RESOURCES: dict[str, tuple[str, str]] = {
    "ConfigMap": ("/api/v1", "configmaps"),
    "Service": ("/api/v1", "services"),
    "Secret": ("/api/v1", "secrets"),
    "Pod": ("/api/v1", "pods"),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims"),
    "Event": ("/api/v1", "events"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "Job": ("/apis/batch/v1", "jobs"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles"),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets"),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies"),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases"),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses"),
    "Node": ("/api/v1", "nodes"),
    models.KIND: (f"/apis/{models.GROUP}/{models.VERSION}", models.PLURAL),
}


class KubeError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# Kinds without a namespace: their namespace argument is ignored.
CLUSTER_SCOPED = {"StorageClass", "Node", "ClusterRole"}


def path(kind: str, namespace: str, name: str | None = None, sub: str | None = None) -> str:
    prefix, plural = _RESOURCES[kind]
    out = f"{prefix}/{plural}" if kind in CLUSTER_SCOPED else f"{prefix}/namespaces/{namespace}/{plural}"
    if name:
        out += f"/{name}"
    if sub:
        out += f"/{sub}"
    return out


def _forget_files_under(directory: str) -> None:
    """Drop the library's memory of the files it wrote under ``directory`` (its private cache, content -> file: it
    reuses a file for the same content, and this directory is about to go): the next load writes them again. A
    library without that cache has nothing to forget."""
    written: dict[str, str] = getattr(kube_config, "_temp_files", {})
    for content, path in list(written.items()):
        if path.startswith(directory + os.sep):
            del written[content]


@contextlib.asynccontextmanager
async def _kubeconfig_loaded(kubeconfig: str | None) -> AsyncIterator[kclient.Configuration]:
    """``kubeconfig`` (else ``$KUBECONFIG``) loaded, its embedded certificates and key in files that last only
    inside this block. The library writes them to /tmp and removes them at a clean exit only (a killed operator
    never removes its private key): here they go to a private directory, removed at the end of the block."""
    configuration = kclient.Configuration()
    with tempfile.TemporaryDirectory(prefix="bookie-operator-kubeconfig-") as private:
        await kconfig.load_kube_config(config_file=kubeconfig or os.environ.get("KUBECONFIG"),
                                       client_configuration=configuration, temp_file_path=private)
        try:
            yield configuration
        finally:
            _forget_files_under(private)


@dataclasses.dataclass(frozen=True)
class Credentials:
    """How a kubeconfig's current context reaches its API server, in memory: PEM bytes, not files."""
    server: str
    ca: bytes | None
    certificate: bytes | None
    private_key: bytes | None
    authorization: str | None  # the Authorization header's value ("Bearer <token>"), from a token or a plugin
    verify_tls: bool


# role -> (content, descriptor) of the files memory_file made: one per role, the newest content's.
_memory_files: dict[str, tuple[bytes, int]] = {}


def memory_file(role: str, content: bytes) -> str:
    """``content`` as a file that never reaches a disk, for a library that loads a certificate or key from a path
    only (Python's ssl does): a memfd_create(2) file, named by /proc/self/fd/<n>, gone with the process however it
    ends. Given the PEM data instead, Kopf writes it to a temporary file in $TMPDIR for the moment it builds each
    session's TLS context, and a process killed in that moment left its private key there. The same content keeps
    its file; new content for a ``role`` (a renewed certificate) replaces the old one's."""
    kept = _memory_files.get(role)
    if kept is not None and kept[0] == content:
        return f"/proc/self/fd/{kept[1]}"
    descriptor = os.memfd_create(f"bookie-operator-{role}", os.MFD_CLOEXEC)
    os.write(descriptor, content)  # a few KiB of memory: never a short write
    _memory_files[role] = (content, descriptor)
    if kept is not None:
        os.close(kept[1])
    return f"/proc/self/fd/{descriptor}"


async def kubeconfig_credentials(kubeconfig: str | None = None) -> Credentials:
    """The credentials ``Kube.connect`` uses, for a second client (Kopf's own), read while their files exist."""
    async with _kubeconfig_loaded(kubeconfig) as configuration:
        async def pem(file: str | None) -> bytes | None:
            return await asyncio.to_thread(Path(file).read_bytes) if file else None

        if not configuration.host:
            raise KubeError(f"{kubeconfig or os.environ.get('KUBECONFIG')}: the current context names no server")
        return Credentials(
            server=configuration.host, ca=await pem(configuration.ssl_ca_cert),
            certificate=await pem(configuration.cert_file), private_key=await pem(configuration.key_file),
            authorization=await configuration.get_api_key_with_prefix("BearerToken", alias="authorization"),
            verify_tls=bool(configuration.verify_ssl))


class Kube:
    def __init__(self, api: kclient.ApiClient) -> None:
        self.api = api

    @classmethod
    async def connect(cls, kubeconfig: str | None = None) -> Kube:
        """In-cluster credentials when running in a pod, else ``kubeconfig`` / ``$KUBECONFIG``."""
        if kubeconfig is None and in_cluster():
            configuration = kclient.Configuration()
            kconfig.load_incluster_config(client_configuration=configuration)
            return cls(kclient.ApiClient(configuration))
        async with _kubeconfig_loaded(kubeconfig) as configuration:
            api = kclient.ApiClient(configuration)  # its TLS context reads the files now
        return cls(api)

    async def close(self) -> None:
        await self.api.close()

    async def request(self, method: str, url: str, *, body: Any = None, query: dict[str, str] | None = None,
                      content_type: str = JSON, accept: str = JSON) -> Obj | None:
        metrics.API_REQUESTS.labels(method).inc()
        try:
            resp = await self.api.call_api(
                url, method, query_params=list((query or {}).items()),
                header_params={"Content-Type": content_type, "Accept": accept},
                body=body, auth_settings=["BearerToken"], _preload_content=False,
                _return_http_data_only=True)
            status, text = resp.status, await resp.text()
        except ApiException as exc:
            status, text = exc.status, str(exc.body)
        if status == 404:
            return None
        if status >= 300:
            raise KubeError(f"{method} {url}: HTTP {status}: {_reason(text)}", status)
        data: Obj = json.loads(text) if text else {}
        return data

    # ----------------------------------------------------------------------------- reads
    async def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return await self.request("GET", path(kind, namespace, name))

    async def get_metadata(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The object's metadata only (a PartialObjectMetadata: labels, ownerReferences...) without its annotations,
        for judging an object whose content the operator must not hold, such as a Secret it may not be entitled
        to."""
        url = path(kind, namespace, name)
        data = await self.request("GET", url, accept=METADATA_ONLY)
        return None if data is None else metadata_only(url, data)

    async def list(self, kind: str, namespace: str, selector: str | None = None) -> list[Obj]:
        query = {"labelSelector": selector} if selector else None
        data = await self.request("GET", path(kind, namespace), query=query)
        return list((data or {}).get("items", []))

    # ---------------------------------------------------------------------------- writes
    async def apply(self, obj: Obj) -> Obj:
        """Server-side apply (forced: this operator owns the fields it sets)."""
        meta = obj["metadata"]
        result = await self.request(
            "PATCH", path(obj["kind"], meta["namespace"], meta["name"]), body=obj,
            query={"fieldManager": FIELD_MANAGER, "force": "true"}, content_type="application/apply-patch+yaml")
        if result is None:
            raise KubeError(f"apply {obj['kind']}/{meta['name']}: not found")
        return result

    async def create(self, obj: Obj) -> Obj | None:
        """Create ``obj`` unless it exists (None then: 409, nothing changed). For what must never be
        overwritten, such as a generated credential."""
        meta = obj["metadata"]
        try:
            return await self.request("POST", path(obj["kind"], meta["namespace"]), body=obj)
        except KubeError as exc:
            if exc.status == 409:
                return None
            raise

    async def delete(self, kind: str, namespace: str, name: str, *, propagation: str = "Background") -> bool:
        result = await self.request("DELETE", path(kind, namespace, name),
                                    body={"kind": "DeleteOptions", "apiVersion": "v1",
                                          "propagationPolicy": propagation})
        return result is not None

    async def apply_crd(self, crd: Obj) -> None:
        """Server-side apply of a CustomResourceDefinition (cluster-scoped; the operator's own CRD)."""
        name = crd["metadata"]["name"]
        await self.request("PATCH", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", body=crd,
                           query={"fieldManager": FIELD_MANAGER, "force": "true"},
                           content_type="application/apply-patch+yaml")

    async def patch_status(self, namespace: str, name: str, status: Obj) -> None:
        await self.request("PATCH", path(models.KIND, namespace, name, "status"), body={"status": status},
                           content_type="application/merge-patch+json")

    async def event(self, owner: Obj, type_: str, reason: str, message: str) -> None:
        """A core/v1 Event about the BookieCluster (``type_`` Normal or Warning)."""
        meta = owner["metadata"]
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:12]}", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": owner.get("apiVersion", f"{models.GROUP}/{models.VERSION}"),
                               "kind": models.KIND, "name": meta["name"], "namespace": meta["namespace"],
                               "uid": meta.get("uid")},
            "type": type_, "reason": reason, "message": message[:1024],
            "source": {"component": FIELD_MANAGER}, "reportingComponent": FIELD_MANAGER,
            "reportingInstance": os.environ.get("HOSTNAME", "bookie-operator"),
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        try:
            await self.request("POST", path("Event", meta["namespace"]), body=event)
        except KubeError:
            pass  # an Event is best effort; the status says the same thing


def metadata_only(url: str, answer: Obj) -> Obj:
    """What is kept of a metadata-only GET's answer: the PartialObjectMetadata without annotations. A whole object
    (an API server that ignored the Accept header) is refused, and nothing of it kept."""
    if answer.get("kind") != "PartialObjectMetadata":
        raise KubeError(f"GET {url}: answered {answer.get('kind')!r}, not the PartialObjectMetadata asked for")
    metadata = {k: v for k, v in (answer.get("metadata") or {}).items() if k not in UNREAD_METADATA}
    return {"apiVersion": answer.get("apiVersion"), "kind": answer["kind"], "metadata": metadata}


def in_cluster() -> bool:
    """Running in a pod with a service account token (read once at start-up)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and \
        os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token")


def _reason(body: Any) -> str:
    try:
        data = json.loads(body)
        return str(data.get("message", body))
    except (TypeError, ValueError):
        return str(body)[:300]
