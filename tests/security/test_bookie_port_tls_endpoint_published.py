"""A bookie with TLS configured publishes the ``tls`` extension on its ``bookie-rpc`` endpoint in its
registration, as Apache BookKeeper's BookieService does (compared with a Java bookie of the same
configuration); a bookie without TLS publishes none."""

from __future__ import annotations

from bookie.metadata import service_info

from tests.security.conftest import registration_of
from tests.support.bookies import BookieSet
from tests.support.java_bookies import BookieCluster


def rpc_extensions(data: bytes) -> tuple[str, ...]:
    (rpc,) = [e for e in service_info.decode(data) if e.protocol == service_info.BOOKIE_RPC]
    return rpc.extensions


async def test_tls_bookies_publish_the_tls_extension_as_java_bookies_do(secured_ours: BookieCluster,
                                                                        secured_java: BookieCluster) -> None:
    java = rpc_extensions(await registration_of(secured_java, secured_java.bookie_ids[0]))
    ours = rpc_extensions(await registration_of(secured_ours, secured_ours.bookie_ids[0]))
    assert java == ours == ("tls",)


async def test_a_bookie_without_tls_publishes_no_extension(bookies: BookieSet) -> None:
    cluster = BookieCluster(bookies.zk_connect, bookies.ledgers_root)
    assert rpc_extensions(await registration_of(cluster, bookies.ids[0])) == ()
