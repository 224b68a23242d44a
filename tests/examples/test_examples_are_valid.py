"""Every manifest in examples/ is a BookieCluster the operator accepts: parsed by the CRD's own model
(bookie_operator.models, the source of the CRD's schema), with the cluster-wide configuration it implies. An
example with spec.tls comes with the cert-manager objects that make its Secrets (<example>-certificates.yaml):
each Secret it names, the bookie port's and the admin API's certificates naming every bookie id's host in the
namespace the file is for, roles the spec admits, the operator's certificate from the admin certificate's CA, and
every issuer a Certificate names defined next to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from bookie.tls import roles_from_ou
from bookie_operator import builders, models
from bookie_operator.decisions import escalations
from bookie_operator.decisions.tls import covers

from tests.examples.cert_manager import certificates, certificates_path, issuer, role
from tests.examples.conftest import CERTIFICATES, certificates_paths, example_paths, load

KINDS = {"minimal", "production", "apache-bookkeeper", "scheduled-compaction"}


def test_the_examples_a_user_starts_from_are_there() -> None:
    assert {p.stem for p in example_paths()} >= KINDS


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_example_parses_with_the_crd_model(path: Path) -> None:
    obj = load(path)
    assert obj["apiVersion"] == f"{models.GROUP}/{models.VERSION}" and obj["kind"] == models.KIND
    assert obj["metadata"]["name"] == path.stem, "an example's name is its file name (one per namespace)"
    spec = models.BookieClusterSpec.model_validate(obj["spec"])
    builders.bookie_config(spec)  # the configuration the bookies would get is valid too
    if spec.implementation == "bookie-fleet":
        assert spec.image == models.BookieClusterSpec.model_fields["image"].default


def test_examples_show_what_they_are_named_for() -> None:
    specs = {p.stem: models.BookieClusterSpec.model_validate(load(p)["spec"]) for p in example_paths()}
    production = specs["production"]
    assert production.resources.get("requests") and (production.affinity or {}).get("podAntiAffinity")
    assert production.storage.ledgers.count > 1 and production.replicas > production.ensemble_size
    tls = production.tls  # no client without a certificate of an allowed role; HTTPS and a certificate for the operator
    assert tls is not None and tls.bookie and tls.client_authentication and tls.authorized_roles
    assert tls.admin and tls.admin_client
    assert specs["apache-bookkeeper"].implementation == "apache-bookkeeper"
    assert specs["apache-bookkeeper"].image.startswith("bookie-fleet/apache-bookkeeper:")
    compaction = specs["scheduled-compaction"]
    assert compaction.compaction.schedule and compaction.gc.window is not None


def with_tls() -> list[Path]:
    return [p for p in example_paths() if load(p)["spec"].get("tls")]


def test_each_certificates_file_belongs_to_an_example_with_tls() -> None:
    assert {p.stem.removesuffix(CERTIFICATES) for p in certificates_paths()} == {p.stem for p in with_tls()}


def roles(certificate: dict[str, Any]) -> list[str]:
    return roles_from_ou(role(certificate))


@pytest.mark.parametrize("path", with_tls(), ids=lambda p: p.stem)
def test_the_certificates_file_makes_what_spec_tls_names(path: Path) -> None:
    obj = load(path)
    spec = models.BookieClusterSpec.model_validate(obj["spec"])
    tls = spec.tls
    assert tls is not None
    docs = [d for d in yaml.safe_load_all(certificates_path(path).read_text()) if d]
    issuers = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"] in ("Issuer", "ClusterIssuer")}
    by_secret = {c["spec"]["secretName"]: c for c in certificates(certificates_path(path))}
    for certificate in (d for d in docs if d["kind"] == "Certificate"):
        kind, name = issuer(certificate)
        assert (kind, name) in issuers, f"{certificate['metadata']['name']}: {kind} {name} is not in the file"
        if kind == "Issuer":
            assert issuers[kind, name]["metadata"]["namespace"] == certificate["metadata"]["namespace"]
    for certificate in by_secret.values():  # PKCS#8: what Java's clients and Apache BookKeeper's bookies read
        assert certificate["spec"]["privateKey"]["encoding"] == "PKCS8", certificate["metadata"]["name"]

    made = {purpose: by_secret.get(name) for purpose, name in tls.checked_secrets().items()}
    assert all(made.values()), f"spec.tls Secrets no Certificate makes: {[p for p, c in made.items() if not c]}"
    (namespace,) = {c["metadata"]["namespace"] for c in made.values() if c}
    name = obj["metadata"]["name"]
    # The operator mounts only the cluster's own Secrets: cert-manager labels them from the secretTemplate.
    foreign = [p for p, c in made.items()
               if c and not escalations.owns(name, "", c["spec"].get("secretTemplate") or {})]
    assert not foreign, f"spec.tls Secrets whose Certificate does not label them {name}'s own: {foreign}"
    hosts = [f"{name}-{i}.{builders.headless_service_name(name)}.{namespace}.svc.{spec.cluster_domain}"
             for i in range(spec.replicas + 8)]  # scaling up adds bookies: a wildcard names them all
    for purpose in ("bookie", "admin"):
        certificate = made.get(purpose)
        if certificate is not None:
            names = certificate["spec"].get("dnsNames", [])
            assert all(covers(names, host) for host in hosts), (purpose, names)

    bookie = made.get("bookie")
    if tls.authorized_roles and bookie is not None:
        # The bookies' own certificate has an admitted role (re-replication), and the file makes a client's.
        assert roles(bookie)[:1] and roles(bookie)[0] in tls.authorized_roles, roles(bookie)
        clients = [c for c in by_secret.values() if c is not bookie and issuer(c) == issuer(bookie)
                   and roles(c)[:1] and roles(c)[0] in tls.authorized_roles]
        assert clients, "no client certificate of an admitted role from the bookie port's issuer"
        assert all("client auth" in c["spec"]["usages"] for c in [bookie, *clients])
    admin_client = made.get("adminClient")
    if admin_client is not None:
        assert made["admin"] is not None and issuer(admin_client) == issuer(made["admin"])
        assert roles(admin_client)[:1] and roles(admin_client)[0] in tls.admin_allowed_roles
