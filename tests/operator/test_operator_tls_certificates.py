"""Whether the certificates of ``spec.tls`` serve the bookies, as the pure decision judges them (test CAs from
trustme): each bookie id's host named by the certificate (exactly or by a wildcard over the headless service),
valid now, signed by the Secret's ca.crt, with its own key, in the layout and key format the bookie reads; and a
clear message naming the Secret, the bookies and the fix otherwise."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import trustme
from bookie_operator import builders
from bookie_operator.decisions.tls import TlsReason, check_tls, covers
from cryptography.hazmat.primitives import serialization

from tests.operator.helpers import NOW, spec

HEADLESS = "bk-headless.ns.svc.cluster.local"
HOSTS = {f"bk-{i}": f"bk-{i}.{HEADLESS}" for i in range(3)}


def secret(cert: trustme.LeafCert, ca: trustme.CA, *, pkcs8: bool = True,
           extra: dict[str, bytes] | None = None) -> dict[str, bytes]:
    key = cert.private_key_pem.bytes()
    if pkcs8:
        loaded = serialization.load_pem_private_key(key, password=None)
        key = loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption())
    return {"tls.crt": cert.cert_chain_pems[0].bytes(), "tls.key": key, "ca.crt": ca.cert_pem.bytes(),
            **(extra or {})}


def verdict(secrets: dict[str, dict[str, bytes] | None], implementation: str = "bookie-fleet",
            **tls: Any) -> Any:
    s = spec(implementation=implementation, tls=tls,
             **({"image": "bookie-fleet/apache-bookkeeper:4.18.0"} if implementation != "bookie-fleet" else {}))
    assert s.tls is not None
    return check_tls(s.tls, s.implementation, secrets, HOSTS, NOW)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_a_wildcard_over_the_headless_service_covers_every_bookie(ca: trustme.CA) -> None:
    cert = ca.issue_cert(f"*.{HEADLESS}", HEADLESS)
    v = verdict({"bk-tls": secret(cert, ca)}, bookie={"secretName": "bk-tls"})
    assert v.valid, v.message()
    assert v.message().startswith("bookie: valid until ")
    assert builders.bookie_id("bk", "ns", 2).rpartition(":")[0] == HOSTS["bk-2"]    # the hosts checked are these


def test_a_certificate_that_misses_bookie_ids_names_them_and_the_fix(ca: trustme.CA) -> None:
    cert = ca.issue_cert(f"bk-0.{HEADLESS}", f"bk-1.{HEADLESS}")
    v = verdict({"bk-tls": secret(cert, ca)}, bookie={"secretName": "bk-tls"})
    (problem,) = v.problems
    assert problem.reason is TlsReason.NOT_COVERED
    assert problem.message == (
        f"spec.tls.bookie: Secret bk-tls: tls.crt names bk-0.{HEADLESS}, bk-1.{HEADLESS}, not the bookie ids' hosts "
        f"of bk-2 (bk-2.{HEADLESS}): add *.{HEADLESS} to its dnsNames")


@pytest.mark.parametrize(("names", "host", "covered"), [
    (["*.svc.example"], "a.svc.example", True),
    (["*.svc.example"], "a.b.svc.example", False),        # a wildcard stands for one label only
    (["A.SVC.example"], "a.svc.example", True),
    (["*.example"], "example", False),
    ([], "a.svc.example", False),
])
def test_hostname_matching_follows_rfc_6125(names: list[str], host: str, covered: bool) -> None:
    assert covers(names, host) is covered


def test_every_bad_secret_is_named_with_its_problem(ca: trustme.CA) -> None:
    good = ca.issue_cert(f"*.{HEADLESS}")
    other_ca = trustme.CA()
    expired = ca.issue_cert(f"*.{HEADLESS}", not_before=NOW - dt.timedelta(days=30),
                            not_after=NOW - dt.timedelta(days=1))
    future = ca.issue_cert(f"*.{HEADLESS}", not_before=NOW + dt.timedelta(days=1),
                           not_after=NOW + dt.timedelta(days=30))
    mismatched = {**secret(good, ca), "tls.key": secret(ca.issue_cert("x.example"), ca)["tls.key"]}
    cases: list[tuple[dict[str, bytes] | None, TlsReason, str]] = [
        (None, TlsReason.SECRET_MISSING, "not found"),
        ({"tls.crt": b"x", "ca.crt": b"y"}, TlsReason.KEY_MISSING, "has no tls.key"),
        ({"tls.crt": b"junk", "tls.key": b"junk", "ca.crt": b"junk"}, TlsReason.INVALID, "not PEM certificates"),
        (secret(expired, ca), TlsReason.EXPIRED, "tls.crt expired at"),
        (secret(future, ca), TlsReason.NOT_YET_VALID, "tls.crt is valid only from"),
        ({**secret(good, ca), "ca.crt": other_ca.cert_pem.bytes()}, TlsReason.UNTRUSTED, "is not signed by ca.crt"),
        (mismatched, TlsReason.KEY_MISMATCH, "tls.key is not the private key of tls.crt"),
    ]
    for data, reason, text in cases:
        v = verdict({"bk-tls": data}, bookie={"secretName": "bk-tls"})
        assert [p.reason for p in v.problems] == [reason], (reason, v.message())
        assert text in v.message() and "Secret bk-tls" in v.message()


def test_an_intermediate_ca_in_the_chain_is_followed(ca: trustme.CA) -> None:
    intermediate = ca.create_child_ca()
    cert = intermediate.issue_cert(f"*.{HEADLESS}")
    data = secret(cert, ca)
    data["tls.crt"] = b"".join(p.bytes() for p in cert.cert_chain_pems)     # leaf, then the intermediate
    assert verdict({"bk-tls": data}, bookie={"secretName": "bk-tls"}).valid


def test_java_bookies_need_pkcs8_keys_and_a_combined_pem_for_zookeeper(ca: trustme.CA) -> None:
    cert = ca.issue_cert(f"*.{HEADLESS}")
    traditional = secret(cert, ca, pkcs8=False)
    assert traditional["tls.key"].startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert verdict({"bk-tls": traditional}, bookie={"secretName": "bk-tls"}).valid        # ours reads it
    java = verdict({"bk-tls": traditional}, "apache-bookkeeper", bookie={"secretName": "bk-tls"})
    assert [p.reason for p in java.problems] == [TlsReason.KEY_FORMAT]
    assert "privateKey.encoding: PKCS8" in java.message()

    zk = ca.issue_cert("bookies")
    without = verdict({"zk-tls": secret(zk, ca)}, "apache-bookkeeper", zookeeper={"secretName": "zk-tls"})
    assert [p.reason for p in without.problems] == [TlsReason.KEY_MISSING]
    assert "has no tls-combined.pem" in without.message() and "CombinedPEM" in without.message()
    combined = secret(zk, ca, extra={"tls-combined.pem": b"key and chain"})
    assert verdict({"zk-tls": combined}, "apache-bookkeeper", zookeeper={"secretName": "zk-tls"}).valid
    # A ZooKeeper client certificate need not name the bookies.
    assert verdict({"zk-tls": secret(zk, ca)}, zookeeper={"secretName": "zk-tls"}).valid


def test_spec_rules_of_tls() -> None:
    with pytest.raises(ValueError, match=r"authorizedRoles needs spec\.tls\.clientAuthentication"):
        spec(tls={"bookie": {"secretName": "a"}, "authorizedRoles": ["broker"]})
    # On Apache BookKeeper's bookies spec.tls.admin is the inspector's HTTPS (their own admin server stays HTTP).
    assert spec(implementation="apache-bookkeeper", image="bookie-fleet/apache-bookkeeper:4.18.0",
                tls={"admin": {"secretName": "a"}}).tls is not None
    with pytest.raises(ValueError, match=r"spec\.config\.httpServerTlsCertificatePath: set by spec\.tls\.admin"):
        spec(tls={"admin": {"secretName": "a"}}, config={"httpServerTlsCertificatePath": "/x"})
