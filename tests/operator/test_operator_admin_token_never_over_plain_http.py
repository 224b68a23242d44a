"""With ``spec.tls.admin`` the operator presents the admin token only over HTTPS: while the admin certificate's
Secret is missing (no CA to verify the bookies with), its calls go out without the token; once the Secret is
there, over HTTPS with it."""

from __future__ import annotations

import trustme
from bookie_operator.reconcile.ports import AdminTls
from bookie_operator.reconcile.tls import RECHECK_S

from tests.operator.fakes import NS, FakeBookie, World, cluster_spec
from tests.operator.test_operator_reconcile_certificates import secret


def recording_credentials(w: World) -> list[tuple[str | None, AdminTls | None]]:
    """The (token, TLS) of every admin client the operator makes from now on."""
    seen: list[tuple[str | None, AdminTls | None]] = []

    def admin_for(host: str, port: int, token: str | None, tls: AdminTls | None = None) -> FakeBookie:
        seen.append((token, tls))
        return w._admin_for(host, port, token, tls)

    w.operator.admin_for = admin_for
    return seen


async def test_the_token_waits_for_https() -> None:
    w = World()
    seen = recording_credentials(w)
    ca = trustme.CA()
    leaf = ca.issue_cert(f"*.bk-headless.{NS}.svc.cluster.local")
    # The Secret without the CA to verify the bookies with (a missing one is awaited before anything runs).
    w.kube.objects[("Secret", NS, "bk-admin-tls")] = secret("bk-admin-tls", {
        "tls.crt": leaf.cert_chain_pems[0].bytes(), "tls.key": leaf.private_key_pem.bytes()})
    w.kube.create_cluster("bk", cluster_spec(tls={"admin": {"secretName": "bk-admin-tls"}}))
    for _ in range(3):
        await w.tick()
    assert seen and all(token is None and tls is None for token, tls in seen)

    w.kube.objects[("Secret", NS, "bk-admin-tls")] = secret("bk-admin-tls", {
        "tls.crt": leaf.cert_chain_pems[0].bytes(), "tls.key": leaf.private_key_pem.bytes(),
        "ca.crt": ca.cert_pem.bytes()})
    seen.clear()
    w.clock.advance(RECHECK_S)
    await w.tick()
    assert seen and all(token is not None and tls is not None for token, tls in seen)


async def test_without_spec_tls_admin_the_token_goes_over_http() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    await w.tick()
    assert {t for b in w.bookies.values() for t in b.tokens} - {None}


async def test_apache_bookkeepers_admin_api_gets_no_token_and_no_https() -> None:
    """Its admin server ignores tokens and serves plain HTTP (spec.tls.admin is the inspector's there): the token
    would only cross the network for nothing."""
    w = World()
    seen = recording_credentials(w)
    ca = trustme.CA()
    leaf = ca.issue_cert(f"*.bk-headless.{NS}.svc.cluster.local")
    w.kube.objects[("Secret", NS, "bk-admin-tls")] = secret("bk-admin-tls", {
        "tls.crt": leaf.cert_chain_pems[0].bytes(), "tls.key": leaf.private_key_pem.bytes(),
        "ca.crt": ca.cert_pem.bytes()})
    for name, tls in (("bk", {"admin": {"secretName": "bk-admin-tls"}}), ("plain", None)):
        w.kube.create_cluster(name, cluster_spec(implementation="apache-bookkeeper",
                                                 image="bookie-fleet/apache-bookkeeper:4.18.0",
                                                 **({"tls": tls} if tls else {})))
    for _ in range(3):
        await w.tick()
    assert seen and all(token is None and tls is None for token, tls in seen), seen
