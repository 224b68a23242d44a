"""Bookies in the shape apache/pulsar-helm-chart renders them (our own manifest of that shape, not the chart's):
a ConfigMap ``<release>-bookie`` of the bookie's configuration as environment variables, a headless Service and a
StatefulSet ``<release>-bookie`` (pods ``<release>-bookie-N``, hostname bookie ids), the container
``<release>-bookie`` with the journal and ledgers claims ``<release>-bookie-journal`` and ``<release>-bookie-ledgers``
mounted under ``/pulsar/data/bookkeeper``, admin HTTP on port 8000. The image is Apache BookKeeper's Java bookie
(``hack/apache-bookkeeper``), which reads ``BK_<key>`` variables where Pulsar's image reads ``<key>``.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

IMAGE = "bookie-fleet/apache-bookkeeper:4.18.0"
HTTP_PORT = 8000
DATA = "/pulsar/data/bookkeeper"


def labels(release: str) -> dict[str, str]:
    return {"app": "pulsar", "release": release, "component": "bookie"}


def bookie_objects(release: str, metadata_service_uri: str, replicas: int = 2, **config: Any) -> list[Obj]:
    """ConfigMap, Service and StatefulSet of ``replicas`` bookies; ``config`` adds or replaces bookie keys."""
    name = f"{release}-bookie"
    conf = {"metadataServiceUri": metadata_service_uri, "useHostNameAsBookieID": "true",
            "httpServerEnabled": "true", "httpServerPort": str(HTTP_PORT),
            "httpServerClass": "org.apache.bookkeeper.http.vertx.VertxHttpServer",
            "journalDirectories": f"{DATA}/journal", "ledgerDirectories": f"{DATA}/ledgers",
            "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
            # The chart's configData defaults for GC and compaction.
            "minorCompactionThreshold": "0.2", "minorCompactionInterval": "360",
            "majorCompactionThreshold": "0.8", "majorCompactionInterval": "10800", "gcWaitTime": "300000",
            "isForceGCAllowWhenNoSpace": "true",
            **{k: str(v) for k, v in config.items()}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels(release)},
                 "data": {f"BK_{k}": v for k, v in conf.items()}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels(release)},
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": labels(release),
                        "ports": [{"name": "bookie", "port": 3181}, {"name": "http", "port": HTTP_PORT}]}}
    container = {
        "name": name, "image": IMAGE,
        "envFrom": [{"configMapRef": {"name": name}}],
        "ports": [{"name": "bookie", "containerPort": 3181}, {"name": "http", "containerPort": HTTP_PORT}],
        "readinessProbe": {"httpGet": {"path": "/api/v1/bookie/is_ready", "port": HTTP_PORT}, "periodSeconds": 5},
        "volumeMounts": [{"name": f"{name}-journal", "mountPath": f"{DATA}/journal"},
                         {"name": f"{name}-ledgers", "mountPath": f"{DATA}/ledgers"}],
    }
    claims = [{"metadata": {"name": f"{name}-{volume}"},
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
              for volume in ("journal", "ledgers")]
    statefulset = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "labels": labels(release)},
        "spec": {"serviceName": name, "replicas": replicas, "selector": {"matchLabels": labels(release)},
                 "updateStrategy": {"type": "RollingUpdate"}, "podManagementPolicy": "Parallel",
                 "template": {"metadata": {"labels": labels(release)},
                              "spec": {"terminationGracePeriodSeconds": 30,
                                       "securityContext": {"fsGroup": 10000},
                                       "containers": [container]}},
                 "volumeClaimTemplates": claims}}
    return [configmap, service, statefulset]
