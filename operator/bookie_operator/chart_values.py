"""The operator chart's values: one pydantic model, the single source of ``values.schema.json``.

    python -m bookie_operator.chart_values            # rewrite values.schema.json and Chart.yaml's annotations
    python -m bookie_operator.chart_values --check    # exit 1 if either is stale

Helm validates every install, upgrade, template and lint against that schema, so a misspelt value
(``additionalProperties: false`` on every object the chart defines) or a mistyped one fails with its path
instead of being ignored. Free-form Kubernetes fields the chart passes through (resources, affinity,
tolerations, security contexts, labels) stay open objects. The model's defaults are ``values.yaml``'s
(tests/operator/test_operator_chart_values_schema.py keeps the two equal; the comments stay in values.yaml).

It also writes Chart.yaml's Artifact Hub annotations from the same sources: the operator image at the chart's
appVersion, the CRD's kind and version from ``models``, and the BookieClusters of examples/ as its examples.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from bookie_operator import models
from bookie_operator.models import DNS_LABEL_PATTERN

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "bookie-operator"
OUTPUT = CHART / "values.schema.json"

# Prometheus' durations (prometheus-operator's Duration type): 30s, 5m, 1h30m, 0m.
DURATION_PATTERN = r"^(0|([0-9]+(ms|s|m|h|d|w|y))+)$"
Json = dict[str, Any]
Namespace = Annotated[str, Field(pattern=DNS_LABEL_PATTERN, max_length=63)]


class Values(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Image(Values):
    repository: str = Field(default="bookie-fleet/operator", min_length=1, description="The operator image.")
    tag: str = Field(default="", description="Empty: the chart's appVersion.")
    pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"


class Crds(Values):
    manage: bool = Field(default=True, description="The operator applies the CRD of its own version at "
                         "start-up; false: CRDs are managed elsewhere (no RBAC for them, --no-manage-crd).")


class LeaderElection(Values):
    enabled: bool = True
    lease_duration_seconds: int = Field(default=15, ge=1, description="A standby takes over once the leader's "
                                        "Lease has not been renewed for this long.")


class PodDisruptionBudget(Values):
    enabled: bool = True
    min_available: Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%$")] = Field(
        default=1, description="Operator pods kept up (a number or a percentage).")


class ZookeeperSecurity(Values):
    tls_secret: str = Field(default="", description="Secret (tls.crt, tls.key, ca.crt) for TLS to ZooKeeper and "
                            "the operator's x509 identity.")
    digest_secret: str = Field(default="", description="Secret whose key digest holds user:password.")
    enable_security: bool = Field(default=False, description="The operator creates znodes with CREATOR_ALL ACLs.")


class Metrics(Values):
    enabled: bool = True
    port: int = Field(default=9090, ge=1, le=65535)
    service: bool = Field(default=True, description="A Service in front of the metrics port.")


class ServiceAccount(Values):
    create: bool = True
    name: str = Field(default="", description="Empty: the release's full name.")


class Rbac(Values):
    create: bool = True


class PodMonitor(Values):
    enabled: bool = False
    interval: str = Field(default="30s", pattern=DURATION_PATTERN)
    labels: dict[str, str] = Field(default_factory=dict, description="For the Prometheus' podMonitorSelector.")
    token_secret: str = Field(default="", pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$", max_length=253,
                              description="A Secret in the release's namespace whose key `token` Prometheus "
                              "presents on our bookies' /metrics: a token of the BookieClusters' "
                              "spec.adminApi.metricsTokenSecretName. Empty: scraped without a credential.")


class ServiceMonitor(Values):
    enabled: bool = False
    interval: str = Field(default="30s", pattern=DURATION_PATTERN)
    labels: dict[str, str] = Field(default_factory=dict)


class PrometheusRule(Values):
    enabled: bool = False
    labels: dict[str, str] = Field(default_factory=dict)


class GrafanaDashboard(Values):
    enabled: bool = False
    namespace: str = Field(default="", description="Empty: the release's namespace.")
    labels: dict[str, str] = Field(default_factory=lambda: {"grafana_dashboard": "1"})


class Alerts(Values):
    """The thresholds and durations of files/bookie-alerts.yaml."""

    job: str = Field(default="bookie", min_length=1, description="job label of the bookies' series.")
    writable_quorum: int = Field(default=3, ge=1, description="Fewer writable bookies: BookieNoWritableQuorum.")
    entry_log_age_limit_seconds: Annotated[int, Field(ge=1)] | Annotated[str, Field(pattern=r"^[0-9]+$")] = Field(
        default="1209600", description="Seconds (a string of digits in values.yaml: helm prints big numbers "
        "from YAML as 1.2e+06).")
    disk_for: str = Field(default="5m", pattern=DURATION_PATTERN)
    read_only_for: str = Field(default="5m", pattern=DURATION_PATTERN)
    entry_log_age_for: str = Field(default="1h", pattern=DURATION_PATTERN)
    gc_failing_for: str = Field(default="30m", pattern=DURATION_PATTERN)
    quarantine_for: str = Field(default="0m", pattern=DURATION_PATTERN)
    quorum_for: str = Field(default="2m", pattern=DURATION_PATTERN)
    under_replicated_for: str = Field(default="15m", pattern=DURATION_PATTERN)


class Monitoring(Values):
    pod_monitor: PodMonitor = Field(default_factory=PodMonitor)
    service_monitor: ServiceMonitor = Field(default_factory=ServiceMonitor)
    prometheus_rule: PrometheusRule = Field(default_factory=PrometheusRule)
    grafana_dashboard: GrafanaDashboard = Field(default_factory=GrafanaDashboard)
    alerts: Alerts = Field(default_factory=Alerts)


def _resources() -> Json:
    return {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}


def _pod_security_context() -> Json:
    return {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}}


def _security_context() -> Json:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


# Helm checks what the model's validator checks: with namespaces listed, clusterWide cannot be on (helm says
# "at '/clusterWide': value must be false").
_CLUSTER_WIDE_ALONE: Json = {
    "if": {"properties": {"watchNamespaces": {"minItems": 1}}, "required": ["watchNamespaces"]},
    "then": {"properties": {"clusterWide": {"const": False}}},
}


class ChartValues(Values):
    """helm/bookie-operator/values.yaml."""

    model_config = ConfigDict(json_schema_extra=_CLUSTER_WIDE_ALONE)

    name_override: str = Field(default="", description="Replaces the chart's name in the objects' names.")
    image: Image = Field(default_factory=Image)
    crds: Crds = Field(default_factory=Crds)
    replica_count: int = Field(default=2, ge=1, description="Operator pods; one is active, the others wait on "
                               "its Lease.")
    leader_election: LeaderElection = Field(default_factory=LeaderElection)
    pod_disruption_budget: PodDisruptionBudget = Field(default_factory=PodDisruptionBudget)
    watch_namespaces: list[Namespace] = Field(
        default_factory=list, description="Namespaces whose BookieClusters the operator manages, with a Role in "
        "each; empty: the release's namespace only.")
    cluster_wide: bool = Field(
        default=False, description="Every namespace, with a ClusterRole (the operator may then create and patch "
        "StatefulSets and read Secrets in any namespace); watchNamespaces must then be empty.")
    allow_escalations: list[Literal["serviceAccountName", "hostPath", "sidecars", "privileged", "foreignSecrets"]] = \
        Field(default_factory=list, description="BookieCluster fields the operator accepts although they give the "
              "spec's writer more than the bookies need (docs/operator.md, \"What the operator's settings must "
              "allow\"); empty: all refused.")
    reconcile_interval: int = Field(default=30, ge=1, description="Seconds between reconciles of each "
                                    "BookieCluster.")
    log_format: Literal["json", "full", "plain"] = "json"
    verbose: bool = False
    zookeeper_security: ZookeeperSecurity = Field(default_factory=ZookeeperSecurity)
    metrics: Metrics = Field(default_factory=Metrics)
    service_account: ServiceAccount = Field(default_factory=ServiceAccount)
    rbac: Rbac = Field(default_factory=Rbac)
    # Kubernetes' own types, passed through as they are: open objects.
    resources: dict[str, Any] = Field(default_factory=_resources, description="The operator container's.")
    pod_security_context: dict[str, Any] = Field(default_factory=_pod_security_context)
    security_context: dict[str, Any] = Field(default_factory=_security_context)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    affinity: dict[str, Any] = Field(default_factory=dict, description="Empty: prefer the replicas on different "
                                     "nodes.")
    pod_annotations: dict[str, str] = Field(default_factory=dict)
    monitoring: Monitoring = Field(default_factory=Monitoring)

    @model_validator(mode="after")
    def _cluster_wide_or_listed(self) -> ChartValues:
        if self.cluster_wide and self.watch_namespaces:
            raise ValueError("clusterWide watches every namespace: leave watchNamespaces empty")
        return self


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """References inlined and titles dropped: a schema that reads top to bottom, as the values do."""
    if isinstance(node, list):
        return [_inline(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return _inline({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    return {k: _inline(v, defs) for k, v in node.items() if k not in ("title", "$defs")}


def schema() -> Json:
    js = ChartValues.model_json_schema(by_alias=True)
    out = _inline(js, js.get("$defs", {}))
    # A parent chart passes its `global` values to every subchart: allowed, and not the chart's to check.
    out["properties"]["global"] = {"type": "object", "description": "Values of a parent chart, for all subcharts."}
    return {"$schema": "http://json-schema.org/draft-07/schema#", **out}


def render() -> str:
    return json.dumps(schema(), indent=2) + "\n"


# ------------------------------------------------------------------------------ Artifact Hub metadata
EXAMPLES = REPO / "examples"
CHART_YAML = CHART / "Chart.yaml"
ANNOTATIONS_HEADER = "# Artifact Hub's metadata, generated by `python -m bookie_operator.chart_values`. Do not edit.\n"


# The playground's cluster needs the local Kubernetes' small StorageClass: no example for other clusters.
_LOCAL_EXAMPLES = {"playground.yaml"}


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks: the annotations (YAML in YAML) read as the YAML they hold."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_BlockDumper.add_representer(str, _string)


CRD_DESCRIPTION = ("A cluster of BookKeeper-compatible bookies: storage, read-only control for disk usage, "
                   "scheduled compaction, safe decommission, TLS and the storage audit.")


def crd_examples() -> list[Json]:
    """The BookieClusters of examples/ (those meant for any cluster, not the local one's)."""
    return [doc for path in sorted(EXAMPLES.glob("*.yaml")) if path.name not in _LOCAL_EXAMPLES
            for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") == models.KIND]


def artifacthub_annotations(app_version: str) -> dict[str, str]:
    """The image at the chart's appVersion, the CRD, examples/ as its examples (each value a YAML string)."""
    image = Image()
    crd = {"kind": models.KIND, "version": models.VERSION, "name": models.SINGULAR, "displayName": models.KIND,
           "description": CRD_DESCRIPTION}
    return {
        "artifacthub.io/operator": "true",
        "artifacthub.io/images": _yaml([{"name": "operator", "image": f"{image.repository}:{app_version}"}]),
        "artifacthub.io/crds": _yaml([crd]),
        "artifacthub.io/crdsExamples": _yaml(crd_examples()),
        "artifacthub.io/license": project_license(),
        "artifacthub.io/links": _yaml([{"name": "Apache BookKeeper", "url": "https://bookkeeper.apache.org/"}]),
    }


def project_license() -> str:
    """The SPDX expression pyproject.toml states, the one statement of the project's license."""
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"])


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=120)


def render_chart_yaml(text: str) -> str:
    """Chart.yaml with its annotations (the last block, after ANNOTATIONS_HEADER) generated again."""
    head = text.split(ANNOTATIONS_HEADER, 1)[0].rstrip("\n") + "\n"
    app_version = str(yaml.safe_load(head)["appVersion"])
    block = yaml.dump({"annotations": artifacthub_annotations(app_version)}, Dumper=_BlockDumper, sort_keys=False,
                      width=120)
    return head + ANNOTATIONS_HEADER + block


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookie_operator.chart_values", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the checked-in values.schema.json is stale")
    args = parser.parse_args(argv)
    outputs = {OUTPUT: render(), CHART_YAML: render_chart_yaml(CHART_YAML.read_text())}
    stale = {path: text for path, text in outputs.items() if not path.is_file() or path.read_text() != text}
    for path, text in stale.items():
        if args.check:
            print(f"{path.relative_to(REPO)} is stale: run python -m bookie_operator.chart_values", file=sys.stderr)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
