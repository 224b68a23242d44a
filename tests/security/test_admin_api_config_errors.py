"""The admin API's and ZooKeeper's security keys in the one bookie configuration model: a copied Java
configuration, a half-configured HTTPS or a contradiction is refused with a message naming the keys; the admin
API listens on the bookie's own address unless told otherwise."""

from __future__ import annotations

import pytest
from bookie.config import BookieConfig, ConfigError


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        BookieConfig.from_properties(text, "bk_server.conf")
    return str(caught.value)


def test_java_key_stores_are_refused_naming_the_pem_keys() -> None:
    message = refused("httpServerTlsEnable=true\nhttpServerKeyStorePath=/conf/bookie.jks\n"
                      "httpServerKeyStorePassword=changeit\n")
    assert "httpServerKeyStorePath: this bookie reads PEM files, not Java key stores" in message
    assert "httpServerTlsCertificatePath" in message
    assert "changeit" not in message  # a password is never echoed


@pytest.mark.parametrize(("text", "expected"), [
    ("httpServerTlsEnable=true\nhttpServerTlsKeyPath=/k.pem\n",
     "httpServerTlsEnable=true needs httpServerTlsCertificatePath"),
    ("httpServerTlsCertificatePath=/c.pem\nhttpServerTlsKeyPath=/k.pem\n",
     "httpServerTlsCertificatePath, httpServerTlsKeyPath set but httpServerTlsEnable is false"),
    ("httpServerAllowedRoles=admin\n", "httpServerAllowedRoles needs client certificates"),
    ("httpServerAuthDisabled=true\nhttpServerAuthTokenFile=/t\n", "httpServerAuthDisabled=true contradicts"),
    ("zkEnableSecurity=true\n", "zkEnableSecurity=true needs an identity"),
    ("zkTlsCertificatePath=/c.pem\nzkTlsKeyPath=/k.pem\n", "set but zkTlsEnable is false"),
    ("zkTlsEnable=true\nzkTlsCertificatePath=/c.pem\n", "zkTlsCertificatePath and zkTlsKeyPath go together"),
])
def test_half_configured_security_is_refused(text: str, expected: str) -> None:
    assert expected in refused(text)


def test_the_admin_api_listens_on_the_bookies_own_address_by_default() -> None:
    assert BookieConfig.from_properties("").effective_http_server_host == "127.0.0.1"
    assert BookieConfig.from_properties("listeningAddress=10.1.2.3\n").effective_http_server_host == "10.1.2.3"
    assert BookieConfig.from_properties("advertisedAddress=10.9.9.9\nlisteningAddress=0.0.0.0\n") \
        .effective_http_server_host == "10.9.9.9"
    assert BookieConfig.from_properties("httpServerHost=0.0.0.0\n").effective_http_server_host == "0.0.0.0"


def test_complete_settings_are_accepted() -> None:
    conf = BookieConfig.from_properties(
        "httpServerTlsEnable=true\nhttpServerTlsCertificatePath=/c.pem\nhttpServerTlsKeyPath=/k.pem\n"
        "httpServerTlsTrustStorePath=/ca.pem\nhttpServerAllowedRoles=admin, operator\n"
        "httpServerAuthTokenFile=/secrets/token\nzkEnableSecurity=true\nzkDigestAuthFile=/secrets/zk\n"
        "zkTlsEnable=true\nzkTlsTrustStorePath=/ca.pem\n")
    assert conf.http_server_allowed_roles == ["admin", "operator"]
    assert conf.zk_enable_security and conf.zk_tls_enable
