"""Move stored BookieClusters to the CRD's storage version, then drop the old versions from storedVersions.

A CRD whose storage version changed keeps serving objects written before the change, still encoded in the
old version in etcd, and lists that version in ``status.storedVersions``; the old version can leave the CRD
only once no object is stored in it. Rewriting an object unchanged makes the API server encode it in the
current storage version (what kube-storage-version-migrator does); then ``storedVersions`` may be trimmed.

The schemas of all served versions are identical (``crd.py``), so rewriting changes no field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from bookie_operator import models
from bookie_operator.kube import Kube, KubeError

log = logging.getLogger("bookie_operator.storage_version")
CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{models.PLURAL}.{models.GROUP}"
LIST_PATH = f"/apis/{models.GROUP}/{models.VERSION}/{models.PLURAL}"


@dataclass
class Migration:
    stored_before: list[str] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)        # namespace/name
    stored_after: list[str] = field(default_factory=list)


async def migrate(kube: Kube) -> Migration:
    """Rewrite every BookieCluster of every namespace in the storage version, then set storedVersions to it.

    Raises KubeError when a step is refused (no RBAC to list every namespace, for instance): storedVersions
    is then left as it was, which is always safe."""
    crd = await kube.request("GET", CRD_PATH)
    stored = list(((crd or {}).get("status") or {}).get("storedVersions") or [])
    result = Migration(stored_before=stored, stored_after=stored)
    if crd is None or stored == [models.VERSION]:
        return result
    listing = await kube.request("GET", LIST_PATH) or {}
    for item in listing.get("items", []):
        meta = item["metadata"]
        where = f"/apis/{models.GROUP}/{models.VERSION}/namespaces/{meta['namespace']}/{models.PLURAL}/{meta['name']}"
        try:
            # The unchanged object with its resourceVersion: a conflict means someone else wrote it since,
            # and any write stores it in the current version too.
            await kube.request("PUT", where, body={**item, "apiVersion": f"{models.GROUP}/{models.VERSION}",
                                                   "kind": models.KIND})
        except KubeError as exc:
            if exc.status != 409:
                raise
        result.rewritten.append(f"{meta['namespace']}/{meta['name']}")
    await kube.request("PATCH", f"{CRD_PATH}/status", body={"status": {"storedVersions": [models.VERSION]}},
                       content_type="application/merge-patch+json")
    result.stored_after = [models.VERSION]
    log.info("stored BookieClusters migrated to %s/%s (%d rewritten; storedVersions was %s)", models.GROUP,
             models.VERSION, len(result.rewritten), ", ".join(stored))
    return result
