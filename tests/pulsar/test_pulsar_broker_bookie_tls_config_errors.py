"""The broker's TLS to the bookies (``BookieClientTLS``) names the broker.conf key and the file when a file is
missing, unreadable or not PEM, before the broker starts: Pulsar itself would only fail at its first connection
to a bookie, with a handshake error that names neither."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bookie_fleet.certificates import Issued, LocalCA, roles_ou
from bookie_fleet.pulsar import BookieClientTLS, PulsarBroker


@pytest.fixture
def issued(tmp_path: Path) -> Issued:
    return LocalCA(tmp_path / "pki").issue("broker", "pulsar-broker", ou=roles_ou(["broker"]))


def test_the_broker_conf_keys(issued: Issued, tmp_path: Path) -> None:
    password = tmp_path / "key-password"
    password.write_text("secret\n")
    conf = BookieClientTLS.of(issued, key_password=password, refresh_seconds=60).broker_conf()
    assert conf == {
        "bookkeeperTLSClientAuthentication": True,
        "bookkeeperTLSProviderFactoryClass": "org.apache.bookkeeper.tls.TLSContextFactory",
        "bookkeeperTLSKeyFileType": "PEM", "bookkeeperTLSTrustCertTypes": "PEM",
        "bookkeeperTlsCertFilesRefreshDurationSeconds": 60,
        "bookkeeperTLSCertificateFilePath": str(issued.certificate),
        "bookkeeperTLSKeyFilePath": str(issued.key),
        "bookkeeperTLSTrustCertsFilePath": str(issued.ca),
        "bookkeeperTLSKeyStorePasswordPath": str(password),
    }


@pytest.mark.parametrize(("field", "key"), [
    ("certificate", "bookkeeperTLSCertificateFilePath"),
    ("key", "bookkeeperTLSKeyFilePath"),
    ("trust_certs", "bookkeeperTLSTrustCertsFilePath"),
    ("key_password", "bookkeeperTLSKeyStorePasswordPath"),
])
def test_a_missing_file_is_named_with_its_key(issued: Issued, tmp_path: Path, field: str, key: str) -> None:
    missing = tmp_path / "nowhere" / "file.pem"
    changes: dict[str, Any] = {field: missing}
    tls = replace(BookieClientTLS.of(issued), **changes)
    with pytest.raises(ValueError, match=f"^{key}: {re.escape(str(missing))} does not exist$"):
        tls.broker_conf()


def test_an_unreadable_file_is_named_with_its_key(issued: Issued, tmp_path: Path) -> None:
    # A directory where the key should be: unreadable as a file, also for root (who reads any mode).
    tls = replace(BookieClientTLS.of(issued), key=tmp_path)
    expected = f"bookkeeperTLSKeyFilePath: {tmp_path} cannot be read (Is a directory)"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        tls.broker_conf()


def test_a_file_that_is_not_pem_is_named_with_its_key(issued: Issued, tmp_path: Path) -> None:
    der = tmp_path / "ca.der"
    der.write_bytes(b"\x30\x82\x01\x0a" + bytes(64))
    tls = replace(BookieClientTLS.of(issued), trust_certs=der)
    with pytest.raises(ValueError, match=f"^bookkeeperTLSTrustCertsFilePath: {re.escape(str(der))} is not a PEM file"):
        tls.broker_conf()


def test_the_broker_checks_its_files_before_it_starts(issued: Issued, tmp_path: Path) -> None:
    issued.key.unlink()
    broker = PulsarBroker(tmp_path / "broker", "127.0.0.1:1", "/ledgers", "/pulsar",
                          bookie_tls=BookieClientTLS.of(issued))
    with pytest.raises(ValueError, match=r"^bookkeeperTLSKeyFilePath: .* does not exist$"):
        broker.start()
    assert broker.proc is None, "the broker's JVM was started with a missing key"


def test_a_negative_refresh_period_is_refused(issued: Issued) -> None:
    with pytest.raises(ValueError, match="bookkeeperTlsCertFilesRefreshDurationSeconds must be >= 0"):
        BookieClientTLS.of(issued, refresh_seconds=-1)


def test_the_same_keys_in_settings_are_refused(issued: Issued, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"settings must not set \['bookkeeperTLSKeyFilePath'\] too"):
        PulsarBroker(tmp_path, "127.0.0.1:1", "/ledgers", "/pulsar", bookie_tls=BookieClientTLS.of(issued),
                     settings={"bookkeeperTLSKeyFilePath": "/elsewhere.key"})

