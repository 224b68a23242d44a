"""spec.tls.admin on Apache BookKeeper's bookies: the admin API bookie-fleet serves there is the inspector's, so it
gets the HTTPS (its keys, its Secret mounted, HTTPS probes, the audit reading ``bookie+https://`` with the CA),
while the Java bookie's own admin server, which reads Java key stores only, keeps plain HTTP and no TLS key. While
a switch of implementation runs, the one configuration both bookies read never turns HTTPS on for Java's admin
server: only our bookies append that key."""

from __future__ import annotations

from typing import Any

from bookie.config import BookieConfig
from bookie_operator import audit_builders, builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
ADMIN = {"admin": {"secretName": "bk-admin-tls"}}


def containers(**fields: Any) -> dict[str, dict[str, Any]]:
    template = builders.statefulset(OWNER, spec(**fields), 3)["spec"]["template"]["spec"]
    return {c["name"]: c for c in template["containers"]}


def test_the_inspector_serves_https_and_the_java_bookie_stays_on_http() -> None:
    pod = containers(**JAVA, tls=ADMIN)
    bookie, inspector = pod["bookie"], pod["inspector"]
    assert "tls-admin" not in {m["name"] for m in bookie["volumeMounts"]}
    assert "scheme" not in bookie["readinessProbe"]["httpGet"] and "scheme" not in bookie["livenessProbe"]["httpGet"]
    assert {"name": "tls-admin", "mountPath": "/opt/bookie/tls/admin", "readOnly": True} in inspector["volumeMounts"]
    for probe in (inspector["readinessProbe"], inspector["livenessProbe"]):
        assert probe["httpGet"]["scheme"] == "HTTPS" and probe["httpGet"]["port"] == "inspector"

    java_conf = builders.bookie_config(spec(**JAVA, tls=ADMIN))
    assert not any(k.startswith("httpServerTls") for k in java_conf)
    inspector_conf = builders.inspector_config(spec(**JAVA, tls=ADMIN))
    assert inspector_conf["httpServerTlsEnable"] is True
    assert inspector_conf["httpServerTlsCertificatePath"] == "/opt/bookie/tls/admin/tls.crt"
    assert inspector_conf["httpServerTlsKeyPath"] == "/opt/bookie/tls/admin/tls.key"


def test_without_spec_tls_admin_the_inspector_stays_on_http() -> None:
    inspector = containers(**JAVA)["inspector"]
    assert "scheme" not in inspector["readinessProbe"]["httpGet"]
    assert not any(k.startswith("httpServerTls") for k in builders.inspector_config(spec(**JAVA)))


def test_the_operators_client_certificate_is_admitted_by_the_inspector_too() -> None:
    tls = {**ADMIN, "adminClient": {"secretName": "operator-client"}, "adminAllowedRoles": ["operator"]}
    conf = builders.inspector_config(spec(**JAVA, tls=tls))
    assert conf["httpServerTlsTrustStorePath"] == "/opt/bookie/tls/admin/ca.crt"
    assert conf["httpServerAllowedRoles"] == "operator"


def test_the_audit_reads_the_inspectors_over_https_with_the_ca() -> None:
    java = spec(**JAVA, tls=ADMIN)
    inputs = audit_builders.bookie_inputs(OWNER, java, [0])
    assert inputs[1].startswith("bk-0.bk-headless.ns.svc.cluster.local:3181=bookie+https://")
    assert inputs[1].endswith(":8081")


def test_during_a_switch_only_our_bookies_read_the_https_switch() -> None:
    ours = spec(tls=ADMIN)
    shared = builders.switch_bookie_config(ours, "apache-bookkeeper")
    assert "httpServerTlsEnable" not in shared          # Apache BookKeeper's admin server would look for key stores
    cm = builders.switch_configmap(OWNER, ours, "apache-bookkeeper")
    assert cm["data"][builders.OURS_ONLY_FILE].splitlines()[-1] == "httpServerTlsEnable=true"
    assert builders.OURS_ONLY_FILE in builders.PYTHON_START
    # Our bookie's configuration as its start appends the file: HTTPS on, from the admin Secret.
    ours_conf = BookieConfig.model_validate({**shared, "httpServerTlsEnable": "true"})
    assert ours_conf.http_server_tls_enable
    assert builders.OURS_ONLY_FILE not in builders.switch_configmap(OWNER, spec(), "apache-bookkeeper")["data"]
