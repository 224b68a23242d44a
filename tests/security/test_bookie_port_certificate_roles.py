"""Roles come from the client certificate's OU the way BookKeeper's ``CertUtils.getRolesFromOU`` reads them
(``0:role1,role2;1:cluster``), and BookieAuthZFactory admits a client by the first of them only."""

from __future__ import annotations

import pytest
from bookie import tls
from bookie.config import BookieConfig
from bookie.security import BookieSecurity
from bookie_fleet.certificates import bookie_tls_conf

from tests.security.conftest import PKI


@pytest.mark.parametrize(("ou", "roles"), [
    ("0:testRole,testRole1;1:testCluster", ["testRole", "testRole1"]),  # BookKeeper's own test certificate
    ("1:cluster;0: writer , reader ", ["writer", "reader"]),
    ("0:writer,", ["writer"]),  # Java's split drops trailing empty strings
    ("0:", [""]),
    ("1:cluster", []),
    ("writer", []),
    ("0:a;0:b", ["b"]),  # a repeated code: the last one wins, as in CertUtils' map
    (None, []),
])
def test_roles_from_the_ou(ou: str | None, roles: list[str]) -> None:
    assert tls.roles_from_ou(ou) == roles


def test_the_first_ou_of_the_subject_is_read() -> None:
    cert = {"subject": ((("organizationName", "o"),), (("organizationalUnitName", "0:first"),),
                        (("organizationalUnitName", "0:second"),), (("commonName", "c"),))}
    assert tls.peer_roles(cert) == ["first"]


def test_only_the_first_role_is_checked(pki: PKI) -> None:
    security = BookieSecurity(BookieConfig.model_validate(bookie_tls_conf(pki.bookie, roles=["writer"])), None)
    writer_first = {"subject": ((("organizationalUnitName", "0:writer,auditor"),),)}
    auditor_first = {"subject": ((("organizationalUnitName", "0:auditor,writer"),),)}
    assert security.on_protocol_upgrade(writer_first) is None
    refusal = security.on_protocol_upgrade(auditor_first)
    assert refusal is not None and "certificate role 'auditor' is not in authorizedRoles ['writer']" in refusal
    assert security.on_protocol_upgrade(None) == "no client certificate"
    assert "no role in the OU" in str(security.on_protocol_upgrade({"subject": ((("commonName", "c"),),)}))
