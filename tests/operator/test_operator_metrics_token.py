"""spec.adminApi.metricsTokenSecretName: the operator puts the hashes of that Secret's tokens beside the admin and
audit tokens' (<cluster>-token-hashes, key ``metrics``), mounts them into our bookies and the inspectors, and
points their httpServerMetricsTokenFile at them, so /metrics asks Prometheus for one of those tokens. A missing
Secret stops the reconcile with a condition saying what to do (the bookies would not start without the file);
once it exists the cluster goes on. A Secret not named for the cluster is refused unless the operator allows
foreignSecrets. Without the field nothing of this exists and /metrics stays open."""

from __future__ import annotations

import base64
import hashlib

import pytest
from bookie_operator import builders, models
from bookie_operator.decisions import escalations

from tests.operator.fakes import NS, World, cluster_spec, own_secret_metadata

PROMETHEUS_TOKEN = "prometheus-scrapes-with-this-token"


def _secret(name: str, token_text: str) -> dict[str, object]:
    return {"kind": "Secret", "metadata": own_secret_metadata(name),
            "data": {"token": base64.b64encode(token_text.encode()).decode()}}


def _metrics_hashes(w: World) -> str:
    secret = w.kube.objects[("Secret", NS, "bk-token-hashes")]
    return base64.b64decode(secret["data"]["metrics"]).decode()


async def test_the_bookies_get_the_hashes_of_prometheus_tokens() -> None:
    w = World()
    w.kube.objects[("Secret", NS, "bk-metrics-token")] = _secret("bk-metrics-token", f"{PROMETHEUS_TOKEN}\n")
    w.kube.create_cluster("bk", cluster_spec(adminApi={"metricsTokenSecretName": "bk-metrics-token"}))
    await w.tick()
    assert _metrics_hashes(w) == f"sha256:{hashlib.sha256(PROMETHEUS_TOKEN.encode()).hexdigest()}\n"
    assert "StatefulSet/bk" in w.kube.applied
    assert PROMETHEUS_TOKEN not in repr(w.kube.objects[("StatefulSet", NS, "bk")])


async def test_a_missing_metrics_secret_stops_the_reconcile_until_it_exists() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(adminApi={"metricsTokenSecretName": "bk-metrics-token"}))
    outcome = await w.tick()
    assert outcome.waiting and "StatefulSet/bk" not in w.kube.applied
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "SecretMissing", degraded
    assert degraded["message"] == ("spec.adminApi.metricsTokenSecretName: Secret bk-metrics-token does not "
                                   "exist yet; create it with the key token")
    w.kube.objects[("Secret", NS, "bk-metrics-token")] = _secret("bk-metrics-token", f"{PROMETHEUS_TOKEN}\n")
    await w.tick()
    assert "StatefulSet/bk" in w.kube.applied and _metrics_hashes(w).startswith("sha256:")


@pytest.mark.parametrize("implementation", ["bookie-fleet", "apache-bookkeeper"])
def test_our_bookies_and_the_inspectors_read_the_hashes_from_their_configuration(implementation: str) -> None:
    image = "bookie-fleet/bookie:0.1.0" if implementation == "bookie-fleet" else "apache/bookkeeper:4.17.3"
    spec = models.parse_spec(cluster_spec(implementation=implementation, image=image,
                                          adminApi={"metricsTokenSecretName": "bk-metrics-token"}))
    pod = builders.statefulset(builders.Owner("bk", NS, "uid"), spec, 3)["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == "bk-token-hashes"]
    assert {"key": "metrics", "path": "metrics"} in volume["secret"]["items"]
    conf = builders.bookie_config(spec) if implementation == "bookie-fleet" else builders.inspector_config(spec)
    assert conf["httpServerMetricsTokenFile"] == f"{builders.TOKEN_HASHES_DIR}/metrics"
    if implementation == "apache-bookkeeper":
        assert "httpServerMetricsTokenFile" not in builders.bookie_config(spec), "Java's bookie has no such key"


def test_without_the_field_metrics_stay_open() -> None:
    spec = models.parse_spec(cluster_spec())
    assert "httpServerMetricsTokenFile" not in builders.bookie_config(spec)
    assert "metrics" not in builders.token_hashes_secret(builders.Owner("bk", NS, "uid"), "a", "r")["data"]
    with pytest.raises(models.InvalidSpec, match="httpServerMetricsTokenFile: owned by the operator"):
        models.parse_spec(cluster_spec(config={"httpServerMetricsTokenFile": "/x"}))


def test_a_shared_secret_needs_the_foreign_secrets_allowance() -> None:
    spec = models.parse_spec(cluster_spec(adminApi={"metricsTokenSecretName": "fleet-metrics-token"}))
    shared = {"fleet-metrics-token": False}      # neither owned by the cluster nor labelled as its own
    [message] = escalations.refused("bk", spec, frozenset(), shared)
    assert message.startswith("spec.adminApi.metricsTokenSecretName: Secret fleet-metrics-token")
    assert escalations.refused("bk", spec, frozenset({escalations.FOREIGN_SECRETS}), shared) == []
