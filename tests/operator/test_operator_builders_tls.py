"""What ``spec.tls`` turns into in the pods the builders make: each Secret mounted whole (so renewals reach the
running bookie) at its own directory, the configuration keys pointing at its files on each bookie
implementation, HTTPS probes with an admin certificate, and ZooKeeper's system properties for Java bookies."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
ALL = {"bookie": {"secretName": "bk-tls"}, "admin": {"secretName": "bk-admin-tls"},
       "zookeeper": {"secretName": "bk-zk-tls"}}


def pod(**fields: Any) -> dict[str, Any]:
    return dict(builders.statefulset(OWNER, spec(**fields), 3)["spec"]["template"]["spec"])


def test_each_secret_is_mounted_whole_and_read_only() -> None:
    p = pod(tls={"admin": ALL["admin"], "zookeeper": ALL["zookeeper"]})
    volumes = {v["name"]: v for v in p["volumes"]}
    assert volumes["tls-admin"]["secret"] == {"secretName": "bk-admin-tls", "defaultMode": 0o444}
    assert volumes["tls-zookeeper"]["secret"]["secretName"] == "bk-zk-tls"
    mounts = {m["name"]: m for m in p["containers"][0]["volumeMounts"]}
    assert mounts["tls-admin"] == {"name": "tls-admin", "mountPath": "/opt/bookie/tls/admin", "readOnly": True}
    assert "subPath" not in mounts["tls-zookeeper"]          # a subPath mount never sees the kubelet's updates
    assert "tls-bookie" not in volumes
    assert not any(v["name"].startswith("tls-") for v in pod()["volumes"])


def test_the_bookie_port_gets_bookkeepers_own_keys_on_both_implementations() -> None:
    tls = {"bookie": ALL["bookie"], "clientAuthentication": True, "authorizedRoles": ["broker", "bookie"],
           "refreshSeconds": 60}
    for fields in ({}, JAVA):
        conf = builders.bookie_config(spec(**fields, tls=tls))
        assert conf["tlsProviderFactoryClass"] == "org.apache.bookkeeper.tls.TLSContextFactory"
        assert (conf["tlsKeyStoreType"], conf["tlsTrustStoreType"]) == ("PEM", "PEM")
        assert conf["tlsKeyStore"] == "/opt/bookie/tls/bookie/tls.key"
        assert conf["tlsCertificatePath"] == "/opt/bookie/tls/bookie/tls.crt"
        assert conf["tlsTrustStore"] == "/opt/bookie/tls/bookie/ca.crt"
        assert conf["tlsClientAuthentication"] is True and conf["tlsCertFilesRefreshDurationSeconds"] == 60
        assert conf["bookieAuthProviderFactoryClass"] == "org.apache.bookkeeper.tls.BookieAuthZFactory"
        assert conf["authorizedRoles"] == "broker,bookie"
    plain = builders.bookie_config(spec(tls={"bookie": ALL["bookie"]}))
    assert plain["tlsClientAuthentication"] is False and "bookieAuthProviderFactoryClass" not in plain
    assert not any(k.startswith("tls") for k in builders.bookie_config(spec()))


def test_admin_https_and_zookeeper_tls_keys_on_our_bookie() -> None:
    conf = builders.bookie_config(spec(tls={"admin": ALL["admin"], "zookeeper": ALL["zookeeper"]}))
    assert conf["httpServerTlsEnable"] is True
    assert conf["httpServerTlsCertificatePath"] == "/opt/bookie/tls/admin/tls.crt"
    assert conf["httpServerTlsKeyPath"] == "/opt/bookie/tls/admin/tls.key"
    assert conf["tlsCertFilesRefreshDurationSeconds"] == 300        # the admin API reloads at refreshSeconds too
    assert (conf["zkTlsEnable"], conf["zkTlsTrustStorePath"]) == (True, "/opt/bookie/tls/zookeeper/ca.crt")
    assert conf["zkTlsCertificatePath"] == "/opt/bookie/tls/zookeeper/tls.crt"
    assert "httpServerTlsEnable" not in builders.bookie_config(spec())


def test_probes_use_https_with_an_admin_certificate() -> None:
    container = pod(tls={"admin": ALL["admin"]})["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
    assert "scheme" not in pod()["containers"][0]["readinessProbe"]["httpGet"]


def test_java_bookies_get_zookeeper_tls_as_system_properties_before_the_specs_own() -> None:
    container = pod(**JAVA, tls={"zookeeper": ALL["zookeeper"]}, jvmOptions=["-Xmx2g"])["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    options = env["BOOKIE_EXTRA_OPTS"].split()
    assert options[:2] == ["-Dzookeeper.client.secure=true",
                           "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty"]
    assert "-Dzookeeper.ssl.keyStore.location=/opt/bookie/tls/zookeeper/tls-combined.pem" in options
    assert "-Dzookeeper.ssl.trustStore.location=/opt/bookie/tls/zookeeper/ca.crt" in options
    assert options[-1] == "-Xmx2g"
    assert "zkTlsEnable" not in builders.bookie_config(spec(**JAVA, tls={"zookeeper": ALL["zookeeper"]}))
    assert "BOOKIE_EXTRA_OPTS" not in {e["name"] for e in pod(**JAVA)["containers"][0]["env"]}


def test_a_changed_secret_name_rolls_the_bookies_and_a_renewal_does_not() -> None:
    """The Secret's name is in the pod template (a restart, one bookie at a time); its content is not."""
    a = builders.statefulset(OWNER, spec(tls={"admin": {"secretName": "a"}}), 3)["spec"]["template"]
    b = builders.statefulset(OWNER, spec(tls={"admin": {"secretName": "b"}}), 3)["spec"]["template"]
    assert a != b
    assert a == builders.statefulset(OWNER, spec(tls={"admin": {"secretName": "a"}}), 3)["spec"]["template"]


def test_client_authentication_refuses_plaintext_clients_too() -> None:
    """BookKeeper's tlsClientAuthentication alone still serves plaintext: on our bookies the operator adds
    onlySecureClientsAllowed; Java bookies, which have no such key, must name authorizedRoles (BookieAuthZFactory
    refuses plaintext), and spec.config cannot turn it off."""
    tls: dict[str, Any] = {"bookie": ALL["bookie"], "clientAuthentication": True}
    conf = builders.bookie_config(spec(tls=tls))
    assert conf["onlySecureClientsAllowed"] is True and conf["tlsClientAuthentication"] is True
    assert "onlySecureClientsAllowed" not in builders.bookie_config(spec(tls={"bookie": ALL["bookie"]}))
    with pytest.raises(ValueError, match="clientAuthentication on implementation apache-bookkeeper needs "
                                         r"spec\.tls\.authorizedRoles"):
        spec(**JAVA, tls=tls)
    java = builders.bookie_config(spec(**JAVA, tls={**tls, "authorizedRoles": ["broker"]}))
    assert java["bookieAuthProviderFactoryClass"] == "org.apache.bookkeeper.tls.BookieAuthZFactory"
    assert "onlySecureClientsAllowed" not in java
    with pytest.raises(ValueError, match=r"spec\.config\.onlySecureClientsAllowed: set by spec\.tls\."
                                         "clientAuthentication"):
        spec(tls=tls, config={"onlySecureClientsAllowed": False})
