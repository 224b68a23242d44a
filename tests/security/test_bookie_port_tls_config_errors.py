"""Bad TLS or authorization settings stop `bookie serve` before it touches anything, with a message naming
the key and what is accepted: BookKeeper's key names, PEM files only (a JKS key store says so), keys that only
work together, certificate files that do not load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bookie.config import BookieConfig, ConfigError

from tests.security.conftest import PKI

TLS = "tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory"
AUTHZ = "bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory"


def serve(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    conf = tmp_path / "bookie.conf"
    conf.write_text("\n".join([
        f"journalDirectories={tmp_path / 'journal'}",
        f"ledgerDirectories={tmp_path / 'ledgers'}",
        "metadataServiceUri=zk+hierarchical://127.0.0.1:1/ledgers",
        *lines,
    ]) + "\n")
    return subprocess.run([sys.executable, "-m", "bookie.cli", "serve", "--conf", str(conf),
                           "--termination-log", str(tmp_path / "termination-log")],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("lines", "expected"), [
    (["tlsKeyStoreType=JKS"], "tlsKeyStoreType: only PEM is supported by this bookie, not JKS: convert the store "
                              "to PEM files"),
    (["tlsTrustStoreType=PKCS12"], "tlsTrustStoreType: only PEM is supported by this bookie, not PKCS12"),
    (["tlsProviderFactoryClass=com.example.Tls"],
     "tlsProviderFactoryClass: the only TLS provider factory is org.apache.bookkeeper.tls.TLSContextFactory"),
    ([TLS], "tlsProviderFactoryClass turns TLS on, which needs tlsCertificatePath and tlsKeyStore"),
    ([TLS, "tlsCertificatePath=/c", "tlsKeyStore=/k", "tlsClientAuthentication=true"],
     "tlsClientAuthentication needs tlsTrustStore"),
    ([TLS, "tlsCertificatePath=/c", "tlsKeyStore=/k", "tlsEnabledProtocols=TLSv1.2,TLSv1.1"],
     "tlsEnabledProtocols: TLSv1.1 not supported (insecure and deprecated by RFC 8996); allowed: TLSv1.2, TLSv1.3"),
    ([TLS, "tlsCertificatePath=/c", "tlsKeyStore=/k", "tlsEnabledCipherSuites=TLS_NOT_A_SUITE"],
     "tlsEnabledCipherSuites: TLS_NOT_A_SUITE is not a cipher suite this bookie knows"),
    ([TLS, "tlsCertificatePath=/c", "tlsKeyStore=/k", "tlsEnabledCipherSuites=TLS_AES_128_GCM_SHA256"],
     "which OpenSSL (Python's ssl) offers all or none of"),
    (["tlsProvider=BouncyCastle"], "tlsProvider: expected OpenSSL or JDK"),
    ([AUTHZ], "it needs tlsProviderFactoryClass and tlsClientAuthentication=true"),
    ([AUTHZ, TLS, "tlsCertificatePath=/c", "tlsKeyStore=/k", "tlsTrustStore=/t", "tlsClientAuthentication=true"],
     "BookieAuthZFactory needs authorizedRoles"),
    (["bookieAuthProviderFactoryClass=org.apache.bookkeeper.sasl.SASLBookieAuthProviderFactory"],
     "the only bookie auth provider is org.apache.bookkeeper.tls.BookieAuthZFactory (certificate roles); SASL is "
     "not supported"),
    (["onlySecureClientsAllowed=true"], "onlySecureClientsAllowed needs TLS: set tlsProviderFactoryClass"),
    (["tlsCertFilesRefreshDurationSeconds=-1"], "allowed: 0 <= tlsCertFilesRefreshDurationSeconds"),
])
def test_invalid_settings_are_named(lines: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as refused:
        BookieConfig.from_properties("\n".join(lines), "bookie.conf")
    assert expected in str(refused.value)


def test_an_invalid_setting_stops_start_up(tmp_path: Path) -> None:
    result = serve(tmp_path, ["tlsKeyStoreType=JKS"])
    assert result.returncode == 2, result.stderr
    assert "tlsKeyStoreType: only PEM is supported by this bookie, not JKS" in result.stderr
    assert not (tmp_path / "journal").exists() and not (tmp_path / "ledgers").exists()


@pytest.mark.parametrize("broken", ["certificate missing", "key of another certificate", "trust store not PEM"])
def test_certificate_files_that_do_not_load_stop_start_up(tmp_path: Path, pki: PKI, broken: str) -> None:
    cert, key, trust = pki.bookie.certificate, pki.bookie.key, pki.ca
    expected = "key is not the certificate's"
    if broken == "certificate missing":
        cert, expected = tmp_path / "absent.crt", f"tlsCertificatePath: no such file {tmp_path / 'absent.crt'}"
    elif broken == "key of another certificate":
        key = pki.writer.key
    else:
        trust = tmp_path / "trust.pem"
        trust.write_text("not a certificate\n")
        expected = f"tlsTrustStore {trust}: not PEM CA certificates"
    result = serve(tmp_path, [TLS, f"tlsCertificatePath={cert}", f"tlsKeyStore={key}", f"tlsTrustStore={trust}",
                              "tlsClientAuthentication=true"])
    assert result.returncode == 1, result.stderr
    assert "cannot start (InvalidConfig): TLS: " in result.stderr and expected in result.stderr
    assert (tmp_path / "termination-log").read_text().startswith("InvalidConfig: TLS: ")
    assert not (tmp_path / "journal").exists() and not (tmp_path / "ledgers").exists()


def test_the_keys_a_pulsar_chart_writes_are_accepted_as_they_are(pki: PKI) -> None:
    # Apache Pulsar's Helm chart: PEM files, a 300 s refresh, no client authentication.
    conf = BookieConfig.from_properties("\n".join([
        TLS, f"tlsCertificatePath={pki.bookie.certificate}", "tlsKeyStoreType=PEM", f"tlsKeyStore={pki.bookie.key}",
        "tlsTrustStoreType=PEM", f"tlsTrustStore={pki.ca}", "tlsCertFilesRefreshDurationSeconds=300",
        "tlsProvider=OpenSSL", "tlsHostnameVerificationEnabled=true"]))
    assert conf.tls_enabled and not conf.tls_client_authentication
    assert conf.tls_cert_files_refresh_duration_seconds == 300
    with pytest.raises(ConfigError, match="tlsKeyStoreType"):
        BookieConfig.from_properties(TLS + "\ntlsKeyStoreType=JKS\n")
